import { Agent, get } from 'node:http';
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

export interface HttpTarget {
  url: string;
  headers?: Record<string, string>;
}

/** The service's page, as one client asks for it. */
export const pageTarget = (httpPort: number, token: string, page: Page): HttpTarget => ({
  url: `http://127.0.0.1:${httpPort}${pathOf(page)}`,
  headers: { authorization: `Bearer ${token}` },
});

const WARM_UP_MS = 1000;
const TURN_MS = 1000;

/**
 * One client's latency against each target, one request at a time over one kept-alive node:http
 * connection: a lean client, as autocannon is under load (undici's fetch, used before, put 1-4 ms
 * more on the same server's 99th percentile in a side-by-side check). After an untimed second
 * each (a bare server just started is still compiling), the targets take turns of a second until
 * each had `seconds`, so a machine whose speed drifts moves them alike.
 */
export async function oneClientLatencies(
  targets: readonly HttpTarget[],
  seconds: number,
): Promise<Latency[]> {
  const agents = targets.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const samples = targets.map((): number[] => []);
  const ask = ({ url, headers }: HttpTarget, agent: Agent) =>
    new Promise<void>((resolve, reject) => {
      get(url, { agent, headers }, (response) => {
        response.resume();
        response.on('end', () =>
          response.statusCode === 200
            ? resolve()
            : reject(new Error(`${url} answered ${response.statusCode}`)),
        );
      }).on('error', reject);
    });
  const run = async (i: number, ms: number, kept?: number[]) => {
    for (const end = performance.now() + ms; performance.now() < end; ) {
      const started = performance.now();
      await ask(targets[i] as HttpTarget, agents[i] as Agent);
      kept?.push(performance.now() - started);
    }
  };
  try {
    for (const i of targets.keys()) await run(i, WARM_UP_MS);
    const turns = Math.max(1, Math.round((seconds * 1000) / TURN_MS));
    for (let turn = 0; turn < turns; turn++) {
      for (const i of targets.keys()) await run(i, TURN_MS, samples[i]);
    }
    return samples.map(latency);
  } finally {
    for (const agent of agents) agent.destroy();
  }
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
