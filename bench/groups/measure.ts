import { randomBytes } from 'node:crypto';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import type { Backend } from '../backends.js';
import { CHAT_ENV } from '../chat/measure.js';
import { POOL_SIZE } from '../datapath/measure.js';
import {
  type PgbenchWindow,
  pgbenchContender,
  pgbenchTargetOf,
  pgClientContender,
} from '../datapath/pgbench.js';
import { progress } from '../realtime/progress.js';
import { REST_CONNECTIONS, type RestWindow } from '../realtime/rest-load.js';
import {
  type Contender,
  type ContenderRounds,
  interleavedRounds,
  type RoundSchedule,
  WARMUP_SECONDS,
} from '../realtime/rounds.js';
import { type Atrium, startAtrium, startBareServer, stopAtrium } from '../realtime/servers.js';
import { type TokenIssuer, tokenIssuer } from '../realtime/tokens.js';
import { type Latency, postgresSql } from '../worlds/harness.js';
import { withBackend } from '../worlds/measure.js';
import { type ChatBesideBare, measureChatBesideBare, ONLINE } from './chat.js';
import { JOIN_LOCK_PREFIX, joinRequests, joinScript } from './joins.js';
import { rosterCursors, rosterLatency, rosterPageScript, rosterRequests } from './roster.js';
import { MEMBERS, seedGroups } from './seed.js';

/**
 * One backend's measurements: roster pages and joins beside pgbench on both; on Postgres + Redis
 * also the group chat across two instances (one instance cannot show it). pgbench runs with the
 * service's pool size and with as many clients as the service has connections, on Postgres; on
 * the embedded database with one client, over a copy of the seeded database served by
 * bench/bare-pglite-socket.ts (PGlite serves one connection at a time).
 */

/** Joins each contender is seeded for per second of its windows (more than either reached). */
const JOINS_PER_SECOND = { service: 2_000, ceiling: 6_000 };

export interface Compared {
  service: ContenderRounds<RestWindow>;
  ceilings: ContenderRounds<PgbenchWindow>[];
}

export interface GroupsResults {
  database: string;
  pgbenchClients: number[];
  roster: Compared;
  /** One client, one request at a time. */
  rosterAlone: Latency;
  joins: Compared;
  chat?: ChatBesideBare[];
}

export async function compare(
  label: string,
  service: Contender<RestWindow>,
  ceilings: Ceiling[],
  schedule: RoundSchedule,
): Promise<Compared> {
  try {
    const [rest, ...pgbench] = await interleavedRounds<RestWindow | PgbenchWindow>(
      label,
      [service, ...ceilings],
      schedule,
    );
    return { service: rest, ceilings: pgbench } as Compared;
  } finally {
    await Promise.all(ceilings.map((c) => c.close()));
  }
}

type Ceiling = Contender<PgbenchWindow> & { close(): Promise<void> };

/**
 * pgbench running a script with each number of clients on Postgres (`databaseUrl`); on the
 * embedded database with one client, each window on a PGlite server of its own on `copy`: a
 * PGlite socket is one session, where the statements a run prepared are still there when the next
 * run prepares them again (an error that aborts its transaction).
 */
export function pgbenchCeilings(
  clients: number[],
  databaseUrl: string | undefined,
  copy: string,
  through: 'pgbench' | '`pg`' = 'pgbench',
) {
  const contender = through === 'pgbench' ? pgbenchContender : pgClientContender;
  return async (script: string, variables: Record<string, string>): Promise<Ceiling[]> => {
    if (databaseUrl) {
      const target = pgbenchTargetOf(databaseUrl);
      return Promise.all(clients.map((c) => contender(`${through} -c ${c}`, target, script, variables, c)));
    }
    const window = async (seconds: number) => {
      const server = await startBareServer('bench/bare-pglite-socket.ts', { BARE_PGLITE_DIR: copy });
      const target = {
        host: server.announced.host as string,
        port: 5432,
        user: 'postgres',
        database: 'postgres',
      };
      const run = await contender('', target, script, variables, 1, server.pid);
      try {
        return await run.window(seconds);
      } finally {
        await run.close();
        await server.stop();
      }
    };
    return [{ name: `${through} -c 1`, window, close: async () => {} }];
  };
}

export async function postgresVersion(url: string): Promise<string> {
  const sql = await postgresSql(url);
  try {
    const [row] = await sql.query<{ version: string }>('select version()');
    return row?.version.split(' on ')[0] ?? 'Postgres';
  } finally {
    await sql.close();
  }
}

export function measureGroups(
  backend: Backend,
  schedule: RoundSchedule,
  seconds: number,
  nodeArgs?: readonly string[],
): Promise<GroupsResults> {
  return withBackend(backend, async (baseEnv, dataDir) => {
    // Ids of this run only: Redis (rate limits, event histories) outlives the run's database.
    const prefix = randomBytes(4).toString('hex');
    const env: Record<string, string> = { ...baseEnv, ...CHAT_ENV, GROUP_MAX_MEMBERS: '100000' };
    const loadedSeconds = WARMUP_SECONDS + schedule.rounds * schedule.windowSeconds + 2;
    progress(`${backend}: seeding ${MEMBERS} members and the joiners with SQL...`);
    const seed = await seedGroups(
      env,
      prefix,
      JOINS_PER_SECOND.service * loadedSeconds,
      JOINS_PER_SECOND.ceiling * loadedSeconds * 2,
    );
    let a: Atrium | undefined;
    let issuer: TokenIssuer | undefined;
    try {
      const copy = join(dataDir, 'ceiling-pgdata');
      if (backend === 'embedded') await cp(join(dataDir, 'pgdata'), copy, { recursive: true });
      const clients = backend === 'postgres' ? [POOL_SIZE, REST_CONNECTIONS] : [1];
      const pgbench = pgbenchCeilings(clients, env.DATABASE_URL, copy);
      const throughPg = pgbenchCeilings(clients, env.DATABASE_URL, copy, '`pg`');
      a = await startAtrium(env, nodeArgs);
      issuer = await tokenIssuer(dataDir);
      const memberTokens = await issuer.issueFor(Array.from({ length: ONLINE }, (_, i) => seed.idOf(i + 1)));
      const joinerIds = Array.from({ length: seed.serviceJoiners }, (_, i) => seed.idOf(MEMBERS + 1 + i));
      const joinerTokens = await issuer.issueFor(joinerIds);
      const database = backend === 'postgres' ? await postgresVersion(env.DATABASE_URL as string) : 'PGlite';

      progress(
        `${backend}: roster pages of ${MEMBERS} members beside the SQL through \`pg\` and pgbench, in rounds...`,
      );
      const token = memberTokens[1] as string;
      const cursors = await rosterCursors(a.httpPort, token, seed.rosterGroup, seed.idOf);
      const rosterAlone = await rosterLatency(a.httpPort, token, seed.rosterGroup, cursors, seconds);
      const roster = await compare(
        `${backend}, roster pages`,
        rosterRequests(a, seed.rosterGroup, token, cursors),
        [
          ...(await throughPg(rosterPageScript(prefix), { g: seed.rosterGroup })),
          ...(await pgbench(rosterPageScript(prefix), { g: seed.rosterGroup })),
        ],
        schedule,
      );

      const chat =
        backend === 'postgres'
          ? await measureChatBesideBare(a, env, memberTokens, seed.rosterGroup, seconds)
          : undefined;

      progress(`${backend}: joins of one open group, ${REST_CONNECTIONS} joiners, beside pgbench...`);
      const joins = await compare(
        `${backend}, joins`,
        joinRequests(a, seed.joinGroup, joinerTokens),
        await pgbench(joinScript(prefix), { g: seed.ceilingJoinGroup, ...JOIN_LOCK_PREFIX }),
        schedule,
      );
      return { database, pgbenchClients: clients, roster, rosterAlone, joins, ...(chat ? { chat } : {}) };
    } finally {
      await issuer?.close();
      if (a) await stopAtrium(a);
    }
  });
}
