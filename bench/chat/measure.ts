import { randomBytes } from 'node:crypto';
import type { Backend } from '../backends.js';
import { POOL_SIZE } from '../datapath/measure.js';
import { seedUsers } from '../datapath/seed.js';
import { progress } from '../realtime/progress.js';
import type { RoundSchedule } from '../realtime/rounds.js';
import { type Atrium, startAtrium, stopAtrium } from '../realtime/servers.js';
import { type TokenIssuer, tokenIssuer } from '../realtime/tokens.js';
import { postgresSql, WORLDS_ENV } from '../worlds/harness.js';
import { withBackend } from '../worlds/measure.js';
import { userIdOf } from './ceiling.js';
import { type HistoryResults, measureHistory } from './history.js';
import { type DmLatencyResults, measureDmLatency, RATES, SENDERS, type User } from './latency.js';
import { measureRecovery, type RecoveryResults } from './recovery.js';
import { measureThroughput, type ThroughputResults } from './throughput.js';

/**
 * One backend's measurements: on Postgres + Redis all four (two instances for the latency), on
 * the embedded database the recovery only (one instance cannot show a cross-instance latency).
 */

/** Seeded users: the throughput's sockets, one per user; the latency and recovery use the first ones. */
export const USERS = 200;

/** The DM limit at the most the config accepts (100,000 per 10 s per sender), so it never refuses. */
export const CHAT_ENV = {
  ...WORLDS_ENV,
  DM_RATE_LIMIT_COUNT: '100000',
  DATABASE_POOL_SIZE: String(POOL_SIZE),
};

export interface ChatResults {
  database?: string;
  latency?: DmLatencyResults[];
  throughput?: ThroughputResults;
  history?: HistoryResults;
  recovery: RecoveryResults;
}

export function measureChat(
  backend: Backend,
  schedule: RoundSchedule,
  seconds: number,
  nodeArgs?: readonly string[],
): Promise<ChatResults> {
  return withBackend(backend, async (baseEnv, dataDir) => {
    // Ids of this run only: Redis (rate limits, event histories) outlives the run's database.
    const prefix = randomBytes(4).toString('hex');
    const ids = await seedUsers(baseEnv, USERS, userIdOf(prefix));
    const env: Record<string, string> = { ...baseEnv, ...CHAT_ENV };
    const ws = (service: Atrium) => `ws://127.0.0.1:${service.wsPort}/ws`;
    const running: Atrium[] = [];
    let issuer: TokenIssuer | undefined;
    try {
      const a = await startAtrium(env, nodeArgs);
      running.push(a);
      issuer = await tokenIssuer(dataDir);
      const tokens = await issuer.issueFor(ids);
      const users: User[] = ids.map((id, i) => ({ id, token: tokens[i] as string }));
      const results: Omit<ChatResults, 'recovery'> = {};
      if (backend === 'postgres') {
        const sql = await postgresSql(env.DATABASE_URL as string);
        const [row] = await sql.query<{ version: string }>('select version()');
        await sql.close();
        results.database = row?.version.split(' on ')[0];
        progress('postgres: starting atrium B on the same database, Redis and DATA_DIR...');
        running.push(await startAtrium(env));
        results.latency = [];
        for (const rate of RATES) {
          progress(
            `postgres: DM latency, ${SENDERS} senders on A to ${SENDERS} recipients on B, ${rate}/s...`,
          );
          results.latency.push(await measureDmLatency(ws(a), ws(running[1] as Atrium), users, seconds, rate));
        }
        await stopAtrium(running.pop() as Atrium); // B, so it idles through nothing else
        progress(`postgres: DM sends, ${USERS} sockets, 50 REST connections and pgbench, in rounds...`);
        results.throughput = await measureThroughput(
          a,
          users,
          env.DATABASE_URL as string,
          prefix,
          POOL_SIZE,
          schedule,
        );
        progress(`postgres: DM history pages, 50 REST connections and pgbench, in rounds...`);
        results.history = await measureHistory(
          a,
          users,
          env.DATABASE_URL as string,
          prefix,
          POOL_SIZE,
          schedule,
        );
      }
      progress(`${backend}: recovery of missed DMs...`);
      const recovery = await measureRecovery(
        `http://127.0.0.1:${a.httpPort}`,
        ws(a),
        users[0] as User,
        users[1] as User,
        backend,
      );
      return { ...results, recovery };
    } finally {
      await issuer?.close();
      await Promise.all(running.map(stopAtrium));
    }
  });
}
