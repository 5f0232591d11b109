import { historyPageSql } from '../../src/modules/chat/dm-reads.repository.js';
import { type PgbenchWindow, pgbenchContender, pgbenchTargetOf } from '../datapath/pgbench.js';
import { databaseCpuSeconds } from '../realtime/process-stats.js';
import { type RestWindow, restContender } from '../realtime/rest-load.js';
import {
  type Contender,
  type ContenderRounds,
  interleavedRounds,
  type RoundSchedule,
} from '../realtime/rounds.js';
import { type Atrium, startBareServer } from '../realtime/servers.js';
import { pgbenchSafeTimeKey, pgbenchUuid } from './ceiling.js';
import type { User } from './latency.js';
import { peerRequests } from './throughput.js';

/**
 * Measurement 4: DM history pages per second (`GET /api/chat/dm/{user_id}/messages?limit=50`, 50
 * connections, each request a random user reading the conversation with their peer, which the
 * send rounds filled) beside pgbench running the page's SELECT for the same conversations with the
 * service's pool size, in interleaved rounds. Each window also takes the CPU Postgres and Redis
 * used, so the cost per page is the service's plus the databases'.
 */

export const PAGE = 50;

export type WithDatabaseCpu<W> = W & { databaseCores: number };

export interface HistoryResults {
  rest: ContenderRounds<WithDatabaseCpu<RestWindow>>;
  ceiling: ContenderRounds<WithDatabaseCpu<PgbenchWindow>>;
  /** bench/chat/bare-history.ts: the page's SELECT and its JSON over bare Fastify + `pg`. */
  bare: ContenderRounds<WithDatabaseCpu<RestWindow>>;
}

/** The contender, its windows also measuring the cores Postgres and Redis used meanwhile. */
function withDatabaseCpu<W extends RestWindow | PgbenchWindow>(
  contender: Contender<W>,
): Contender<WithDatabaseCpu<W>> {
  return {
    name: contender.name,
    async window(seconds) {
      const [before, started] = [await databaseCpuSeconds(), performance.now()];
      const figures = await contender.window(seconds);
      const used = (await databaseCpuSeconds()) - before;
      return { ...figures, databaseCores: used / ((performance.now() - started) / 1000) };
    },
  };
}

/** The page statement as pgbench runs it: the first page of the pair's conversation, as the service reads it. */
function historyPageScript(users: number, prefix: string): string {
  const pair = `(select id from conversations where user_a_id = least(${pgbenchUuid(prefix, 'me')}, ${pgbenchUuid(prefix, 'peer')})
      and user_b_id = greatest(${pgbenchUuid(prefix, 'me')}, ${pgbenchUuid(prefix, 'peer')}))`;
  const page = pgbenchSafeTimeKey(
    historyPageSql(pair, String(PAGE + 1))
      .replaceAll('$2::timestamptz', 'null::timestamptz')
      .replaceAll('$3::uuid', 'null::uuid'),
  );
  return `\\set me random(1, ${users})\n\\set peer (:me % ${users}) + 1\n${page}`;
}

export async function measureHistory(
  atrium: Atrium,
  users: readonly User[],
  databaseUrl: string,
  idPrefix: string,
  poolSize: number,
  schedule: RoundSchedule,
): Promise<HistoryResults> {
  const rest = peerRequests(
    `GET messages?limit=${PAGE}`,
    atrium,
    users,
    (peer) => `/api/chat/dm/${peer}/messages?limit=${PAGE}`,
    {
      method: 'GET',
    },
  );
  const ceiling = await pgbenchContender(
    `pgbench -c ${poolSize}`,
    pgbenchTargetOf(databaseUrl),
    historyPageScript(users.length, idPrefix),
    {},
    poolSize,
  );
  const bareServer = await startBareServer('bench/chat/bare-history.ts', {
    DATABASE_URL: databaseUrl,
    BARE_POOL_SIZE: String(poolSize),
  });
  const bare = restContender(
    'bare Fastify + pg',
    `http://127.0.0.1:${bareServer.port}/page`,
    bareServer.pid,
    {},
    {
      method: 'GET',
    },
  );
  try {
    const [r, c, b] = await interleavedRounds<WithDatabaseCpu<RestWindow | PgbenchWindow>>(
      'postgres, DM history pages',
      [withDatabaseCpu(rest), withDatabaseCpu(ceiling), withDatabaseCpu(bare)],
      schedule,
    );
    return { rest: r, ceiling: c, bare: b } as HistoryResults;
  } finally {
    await ceiling.close();
    await bareServer.stop();
  }
}
