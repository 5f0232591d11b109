import { restContender } from '../realtime/rest-load.js';
import type { BareServer } from '../realtime/servers.js';
import { type Latency, latency } from '../worlds/harness.js';
import { PAGE } from './seed.js';

/**
 * Measurement 3: the inbox reads of a user with 1,000 notifications, `GET /api/notifications?limit=50`
 * and `GET /api/notifications/unread-count`, beside bare-inbox.ts answering the same from the same
 * statements: first one client, one request at a time (the p99 the target is about), then 50
 * connections in interleaved rounds (the ratio).
 */

export type Read = 'list' | 'count';
export const READS: Read[] = ['list', 'count'];

const SERVICE_PATHS: Record<Read, string> = {
  list: `/api/notifications?limit=${PAGE}`,
  count: '/api/notifications/unread-count',
};
const BARE_PATHS: Record<Read, string> = { list: '/notifications', count: '/unread-count' };

export interface InboxTarget {
  port: number;
  pid: number;
  headers: Record<string, string>;
  paths: Record<Read, string>;
}

export const serviceTarget = (atrium: { httpPort: number; pid: number }, token: string): InboxTarget => ({
  port: atrium.httpPort,
  pid: atrium.pid,
  headers: { authorization: `Bearer ${token}` },
  paths: SERVICE_PATHS,
});

export const bareTarget = (bare: BareServer): InboxTarget => ({
  port: bare.port,
  pid: bare.pid,
  headers: {},
  paths: BARE_PATHS,
});

const urlOf = (target: InboxTarget, read: Read) => `http://127.0.0.1:${target.port}${target.paths[read]}`;

async function answer(target: InboxTarget, read: Read): Promise<string> {
  const response = await fetch(urlOf(target, read), { headers: target.headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${urlOf(target, read)} answered ${response.status}: ${text}`);
  return text;
}

/** Both must answer the same before either is measured: the page of PAGE items and count of `unread`. */
export async function checkInbox(service: InboxTarget, bare: InboxTarget, unread: number): Promise<void> {
  for (const read of READS) {
    const [mine, theirs] = [JSON.parse(await answer(service, read)), JSON.parse(await answer(bare, read))];
    if (JSON.stringify(mine) !== JSON.stringify(theirs)) throw new Error(`the ${read} answers differ`);
    const expected = read === 'list' ? mine.items?.length === PAGE : mine.count === unread;
    if (!expected) throw new Error(`the ${read} answer is not the seeded inbox's`);
  }
}

/** One client, one request at a time, for `seconds`. */
export async function oneClient(target: InboxTarget, read: Read, seconds: number): Promise<Latency> {
  const samples: number[] = [];
  for (const end = performance.now() + seconds * 1000; performance.now() < end; ) {
    const started = performance.now();
    await answer(target, read);
    samples.push(performance.now() - started);
  }
  return latency(samples);
}

/** 50 connections (REST_CONNECTIONS) repeating the read, one autocannon run per window. */
export const inboxRequests = (name: string, target: InboxTarget, read: Read) =>
  restContender(name, urlOf(target, read), target.pid, target.headers, { method: 'GET' });
