import { createInterface } from 'node:readline';
import { progress } from '../realtime/progress.js';
import { type RestRequest, restContender } from '../realtime/rest-load.js';
import type { Atrium } from '../realtime/servers.js';
import { type Latency, latency } from '../worlds/harness.js';
import { anySubmitter, submittedScore } from './scores.js';
import { BOARD, type LeaderboardSeed, LIMIT } from './seed.js';

/**
 * The service's side of the benchmark: the two pages (GET /api/leaderboards/{id}/records from the
 * top, and `around=me` as the user in the middle), their exactness, one client's latency, the
 * REST loads of the rounds, and the wait for the rank index the first read starts rebuilding.
 */

export type Page = 'top' | 'around';

const REBUILD_TRIES = 3;

const RECORDS_PATH = `/api/leaderboards/${BOARD}/records`;
const pathOf = (page: Page) => `${RECORDS_PATH}?${page === 'around' ? 'around=me&' : ''}limit=${LIMIT}`;

export interface PageRead {
  status: number;
  ms: number;
  /** Its user ids and ranks are those SQL gave at seed time. */
  exact: boolean;
}

export async function readPage(
  httpPort: number,
  token: string,
  page: Page,
  seed: LeaderboardSeed,
): Promise<PageRead> {
  const started = performance.now();
  const response = await fetch(`http://127.0.0.1:${httpPort}${pathOf(page)}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const body = (await response.json()) as { items?: { user_id: string; rank: number }[] };
  const ms = performance.now() - started;
  const [ids, first] = page === 'top' ? [seed.top, 1] : [seed.middle.page, seed.middle.first];
  const items = body.items ?? [];
  const exact =
    response.status === 200 &&
    items.length === ids.length &&
    items.every((item, i) => item.user_id === ids[i] && item.rank === first + i);
  return { status: response.status, ms, exact };
}

/** A page must be exact before it is measured, or the figures mean nothing. */
export async function checkPage(httpPort: number, token: string, page: Page, seed: LeaderboardSeed) {
  const read = await readPage(httpPort, token, page, seed);
  if (!read.exact) throw new Error(`${pathOf(page)} answered ${read.status}, not the seeded standings`);
}

/** The page's latency unloaded: one client, one request at a time, for `seconds`. */
export async function pageLatency(
  httpPort: number,
  token: string,
  page: Page,
  seconds: number,
): Promise<Latency> {
  const samples: number[] = [];
  const url = `http://127.0.0.1:${httpPort}${pathOf(page)}`;
  const headers = { authorization: `Bearer ${token}` };
  for (const end = performance.now() + seconds * 1000; performance.now() < end; ) {
    const started = performance.now();
    const response = await fetch(url, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
    samples.push(performance.now() - started);
  }
  return latency(samples);
}

export const pageRequests = (atrium: Atrium, token: string, page: Page) =>
  restContender(
    `GET ${page === 'top' ? 'top' : 'around-me'} page`,
    `http://127.0.0.1:${atrium.httpPort}${pathOf(page)}`,
    atrium.pid,
    { authorization: `Bearer ${token}` },
    { method: 'GET' },
  );

/**
 * POST {score} as a random one of users 1..`submitters`, scores as scores.ts draws them, the user
 * named by `headersOf(n)`: the service's load and the bare HTTP ceiling's alike.
 */
export function randomSubmissions(
  submitters: number,
  t0: number,
  headersOf: (n: number) => Record<string, string>,
): RestRequest {
  return {
    body: JSON.stringify({ score: 0 }),
    setup: (sent) => {
      const n = anySubmitter(submitters);
      return {
        ...sent,
        body: JSON.stringify({ score: submittedScore(n, t0) }),
        headers: { ...sent.headers, ...headersOf(n) },
      };
    },
  };
}

/** The service's submissions: tokens[n - 1] is user n's. */
export function submitRequests(atrium: Atrium, tokens: readonly string[], t0: number) {
  return restContender(
    'POST records',
    `http://127.0.0.1:${atrium.httpPort}${RECORDS_PATH}`,
    atrium.pid,
    {},
    randomSubmissions(tokens.length, t0, (n) => ({ authorization: `Bearer ${tokens[n - 1]}` })),
  );
}

/**
 * Resolves with the service's `rank index rebuilt` log line (its `records` and `ms`) once the
 * rebuild the first read started is done. A failed rebuild is reported and `read` starts another,
 * up to REBUILD_TRIES times: on a loaded machine one of its Redis commands can pass the service's
 * command timeout (REDIS_COMMAND_TIMEOUT_MS), which ends the rebuild.
 */
export function indexRebuilt(
  atrium: Atrium,
  read: () => Promise<unknown>,
): Promise<{ records: number; ms: number }> {
  // Not closed when done: closing a readline pauses its input, and the service would block on a full pipe.
  const lines = createInterface({ input: atrium.child.stdout as NodeJS.ReadableStream });
  let failures = 0;
  return new Promise((resolve, reject) => {
    lines.on('line', (line) => {
      if (line.includes('rank index rebuilt')) resolve(JSON.parse(line) as { records: number; ms: number });
      if (!line.includes('rank index rebuild failed')) return;
      progress(`the service: ${line}`);
      if (++failures >= REBUILD_TRIES) reject(new Error('the rank index was not rebuilt'));
      else read().catch(reject);
    });
  });
}
