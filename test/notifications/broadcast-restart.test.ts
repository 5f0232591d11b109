import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer } from '../helpers/accounts.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';
import {
  adminOver,
  eventually,
  PROCESS_TEST_TIMEOUT_MS,
  preparedDataDir,
  type ServiceProcess,
  startService,
} from '../helpers/service-process.js';

/**
 * A broadcast to everyone (docs/notifications.md, "Admin broadcasts") whose node is killed -9
 * between two of its batches, and finished by the next process on the same database. Postgres
 * only: the test holds a row lock to stop the job at a known point, and the embedded database
 * belongs to the killed process.
 */

const { DATABASE_URL, REDIS_URL } = process.env;
/** Accounts the job notifies per transaction (docs/notifications.md). */
const BATCH = 500;
/** With the admin, three batches: the kill lands after the first. */
const SEEDED = 1200;
const CODE = 'news.restart';
/** Sorts after every other id: only the broadcast's time keeps the job from notifying it. */
const LATE_ACCOUNT_ID = 'ffffffff-ffff-4fff-bfff-ffffffffffff';

describe.skipIf(!DATABASE_URL)('a broadcast to everyone whose node is killed between batches', () => {
  let testDb: TestDatabase;
  let dataDir: string;
  const services: ServiceProcess[] = [];
  let hold: Awaited<ReturnType<typeof holdAccount>> | undefined;

  beforeAll(async () => {
    testDb = await createTestDatabase();
    dataDir = await preparedDataDir('atrium-broadcast-');
  });

  afterAll(async () => {
    await hold?.release();
    for (const { child, exited } of services) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it(
    'is finished by the next process: every account it was sent to is notified exactly once, and one created after it is not',
    async () => {
      const env = {
        DATABASE_URL: testDb.url ?? '',
        REDIS_URL: REDIS_URL ?? '',
        REDIS_KEY_PREFIX: `test:broadcast:${randomBytes(6).toString('hex')}:`,
        MIGRATE_ON_START: 'false',
        // The batch waits on the test's lock for as long as it takes the kill to come.
        DATABASE_QUERY_TIMEOUT_MS: '0',
      };
      const first = startService(dataDir, env);
      services.push(first);
      const httpUrl = `http://127.0.0.1:${(await first.listening).httpPort}`;
      const admin = await adminOver(httpUrl, dataDir);
      await seedAccounts(testDb, SEEDED);
      const accounts = (
        await queryRows<{ id: string }>(testDb.db, 'select id from users order by id', [])
      ).map((row) => row.id);
      expect(accounts.length).toBeGreaterThan(2 * BATCH);

      // The second batch's insert takes a key-share lock on each of its accounts' rows (the foreign
      // key) and waits on this one, after the first batch committed.
      hold = await holdAccount(testDb, accounts[BATCH] as string);
      const broadcast = await broadcastToAll(httpUrl, admin);
      await eventually(() => hold?.batchWaiting(), 'the second batch waiting on the held account');
      first.child.kill('SIGKILL');
      await first.exited;

      const atKill = await progress(testDb, broadcast.id);
      expect(atKill).toEqual({ notified: BATCH, last_user_id: accounts[BATCH - 1], finished: false });
      await hold.release();
      hold = undefined;
      await queryRows(
        testDb.db,
        `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
         values (?, 'late_account', 'x', now(), now())`,
        [LATE_ACCOUNT_ID],
      );

      const next = startService(dataDir, env);
      services.push(next);
      await next.listening;
      await eventually(
        async () => ((await progress(testDb, broadcast.id))?.finished ? true : undefined),
        'the broadcast to finish',
      );

      const counts = await queryRows<{ id: string; n: number }>(
        testDb.db,
        `select u.id, count(n.id)::int as n from users u
         left join notifications n on n.user_id = u.id and n.code = ?
         group by u.id`,
        [CODE],
      );
      const byAccount = new Map(counts.map((row) => [row.id, row.n]));
      expect(accounts.filter((id) => byAccount.get(id) !== 1)).toEqual([]);
      expect(byAccount.get(LATE_ACCOUNT_ID)).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS * 2,
  );
});

/** Accounts written in one statement: the job reads only their ids and creation times. */
async function seedAccounts(testDb: TestDatabase, count: number): Promise<void> {
  await queryRows(
    testDb.db,
    `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
     select gen_random_uuid(), 'seed_' || n, 'x', now(), now() from generate_series(1, ?::int) as n`,
    [count],
  );
}

/**
 * Locks the account's row in a transaction of the test's own. `batchWaiting` answers true once a
 * statement inserting notifications waits on that lock; `release` rolls back.
 */
async function holdAccount(testDb: TestDatabase, userId: string) {
  const client = new pg.Client({ connectionString: testDb.url });
  await client.connect();
  await client.query('begin');
  await client.query('select 1 from users where id = $1 for update', [userId]);
  const holder = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;
  return {
    async batchWaiting(): Promise<true | undefined> {
      const rows = await queryRows(
        testDb.db,
        `select 1 from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock'
           and query like '%insert into notifications%' and ? = any (pg_blocking_pids(pid))`,
        [holder],
      );
      return rows.length > 0 ? true : undefined;
    },
    async release(): Promise<void> {
      await client.query('rollback');
      await client.end();
    },
  };
}

/** How far the broadcast got: its recipients so far, where its job stands, and whether it ended. */
async function progress(testDb: TestDatabase, broadcastId: string) {
  const [row] = await queryRows<{ notified: number; last_user_id: string | null; finished: boolean }>(
    testDb.db,
    `select (select count(*)::int from notifications where code = ?) as notified,
            last_user_id, finished_at is not null as finished
     from notification_broadcasts where id = ?`,
    [CODE, broadcastId],
  );
  return row;
}

async function broadcastToAll(httpUrl: string, admin: TokenResponse): Promise<{ id: string }> {
  const response = await fetch(`${httpUrl}/api/admin/notifications`, {
    method: 'POST',
    headers: { ...bearer(admin.access_token), 'content-type': 'application/json' },
    body: JSON.stringify({ all: true, code: CODE, subject: 'Servers restart tonight' }),
  });
  expect(response.status).toBe(202);
  return (await response.json()) as { id: string };
}
