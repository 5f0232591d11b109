import { type PgbenchWindow, pgbenchContender, pgbenchTargetOf } from '../datapath/pgbench.js';
import { type FrameWindow, frameClients } from '../realtime/frame-load.js';
import { type RestWindow, restContender } from '../realtime/rest-load.js';
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
  const rest = restContender(
    'POST messages',
    `http://127.0.0.1:${atrium.httpPort}/api/chat/dm/${peerOf(0)}/messages`,
    atrium.pid,
    {},
    {
      body: JSON.stringify({ body: BODY }),
      setup: (request) => {
        const i = Math.floor(Math.random() * n);
        const authorization = `Bearer ${(users[i] as User).token}`;
        return {
          ...request,
          path: `/api/chat/dm/${peerOf(i)}/messages`,
          headers: { ...request.headers, authorization },
        };
      },
    },
  );
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
