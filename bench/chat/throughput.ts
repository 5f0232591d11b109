import { type PgbenchWindow, pgbenchContender, pgbenchTargetOf } from '../datapath/pgbench.js';
import { type FrameWindow, frameClients } from '../realtime/frame-load.js';
import { type RestRequest, type RestWindow, restContender } from '../realtime/rest-load.js';
import { type ContenderRounds, interleavedRounds, type RoundSchedule } from '../realtime/rounds.js';
import type { Atrium } from '../realtime/servers.js';
import { dmSendScript } from './ceiling.js';
import { BODY, type User } from './latency.js';

/**
 * Measurement 2: DM sends per second through the socket (`dm.send` frames, one socket per user,
 * one frame in flight each) and REST (`POST /api/chat/dm/{user_id}/messages`, 50 connections,
 * each request from a random user), beside pgbench running the same statement with the
 * service's pool size, in interleaved rounds. User i writes to user i + 1 (the last to the first)
 * in all three, so the conversations are the same ones.
 */

export interface ThroughputResults {
  socket: ContenderRounds<FrameWindow>;
  rest: ContenderRounds<RestWindow>;
  ceiling: ContenderRounds<PgbenchWindow>;
  /** Messages the service stored per statement over the rounds (its batches, docs/chat.md). */
  messagesPerStatement: number;
}

/** The service's DM store batches so far: statements run and messages they stored (GET /metrics). */
async function storeBatches(httpPort: number): Promise<{ statements: number; messages: number }> {
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  const value = (suffix: string) =>
    Number(
      new RegExp(`^atrium_statement_batch_size_${suffix}\\{statement="dm_store"\\} (\\d+)`, 'm').exec(
        text,
      )?.[1] ?? 0,
    );
  return { statements: value('count'), messages: value('sum') };
}

/**
 * REST requests of every seeded user to their peer: each request picks a user at random (user i's
 * peer is user i + 1, the last one's the first) and goes to `pathOf(peer)` with their token.
 */
export function peerRequests(
  name: string,
  atrium: Atrium,
  users: readonly User[],
  pathOf: (peerId: string) => string,
  request: RestRequest = {},
) {
  const peerOf = (i: number) => (users[(i + 1) % users.length] as User).id;
  return restContender(
    name,
    `http://127.0.0.1:${atrium.httpPort}${pathOf(peerOf(0))}`,
    atrium.pid,
    {},
    {
      ...request,
      setup: (sent) => {
        const i = Math.floor(Math.random() * users.length);
        const authorization = `Bearer ${(users[i] as User).token}`;
        return { ...sent, path: pathOf(peerOf(i)), headers: { ...sent.headers, authorization } };
      },
    },
  );
}

export async function measureThroughput(
  atrium: Atrium,
  users: readonly User[],
  databaseUrl: string,
  idPrefix: string,
  poolSize: number,
  schedule: RoundSchedule,
): Promise<ThroughputResults> {
  const n = users.length;
  const peerOf = (i: number) => (users[(i + 1) % n] as User).id;
  const socket = await frameClients(
    'dm.send frames',
    `ws://127.0.0.1:${atrium.wsPort}/ws`,
    users.map((u) => u.token),
    atrium.pid,
    { frame: (id, i) => ({ t: 'dm.send', id, d: { user_id: peerOf(i), body: BODY } }), inFlight: 1 },
  );
  const rest = peerRequests('POST messages', atrium, users, (peer) => `/api/chat/dm/${peer}/messages`, {
    body: JSON.stringify({ body: BODY }),
  });
  const ceiling = await pgbenchContender(
    `pgbench -c ${poolSize}`,
    pgbenchTargetOf(databaseUrl),
    dmSendScript(n, idPrefix),
    { body: BODY },
    poolSize,
  );
  try {
    const before = await storeBatches(atrium.httpPort);
    const [s, r, c] = await interleavedRounds<FrameWindow | RestWindow | PgbenchWindow>(
      'postgres, DM sends',
      [socket, rest, ceiling],
      schedule,
    );
    const after = await storeBatches(atrium.httpPort);
    const messagesPerStatement = (after.messages - before.messages) / (after.statements - before.statements);
    return { socket: s, rest: r, ceiling: c, messagesPerStatement } as ThroughputResults;
  } finally {
    await socket.close();
    await ceiling.close();
  }
}
