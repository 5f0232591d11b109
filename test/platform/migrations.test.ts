import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { migrationsList } from '../../migrations/index.js';
import { configFrom } from '../../src/config.js';
import { type Database, openDatabase } from '../../src/platform/db.js';
import { migrateUp, migrationFileNames, migrationStatus, withMigrator } from '../../src/platform/migrate.js';
import { createEmptyDatabase, queryRows, type TestDatabase } from '../helpers/database.js';

const allNames = migrationsList.map((m) => m.name);

const enumTypes = [
  'user_role',
  'world_visibility',
  'asset_type',
  'profile_visibility',
  'audience',
  'friendship_status',
  'group_role',
  'report_state',
  'game_server_status',
  'listing_state',
  'purchase_state',
  'ledger_entry_kind',
  'payout_state',
  'ledger_account',
  'catalog_item_state',
];

describe('database migrations', () => {
  const opened: TestDatabase[] = [];
  afterEach(async () => {
    for (const t of opened.splice(0)) await t.drop();
  });
  const emptyDatabase = async () => {
    const t = await createEmptyDatabase();
    opened.push(t);
    return t;
  };
  // The tests that read what the migrations made share one empty database they were applied to:
  // applying all of them costs seconds of CPU on the embedded database. The test of applying them
  // makes it when it runs first (the file's order); run alone, a test makes its own.
  let migrated: Promise<TestDatabase> | undefined;
  const migratedDatabase = () => {
    migrated ??= createEmptyDatabase().then(async (t) => {
      await migrateUp(t.db, t.url);
      return t;
    });
    return migrated;
  };
  afterAll(async () => {
    await (await migrated)?.drop();
  });

  it('are numbered with four digits, in order, without duplicates', () => {
    const numbers = allNames.map((name) => name.slice(0, 4));
    expect(allNames.every((name) => /^\d{4}_[a-z0-9_]+$/.test(name))).toBe(true);
    expect([...numbers].sort()).toEqual(numbers);
    expect(new Set(numbers).size).toBe(numbers.length);
  });

  it('are each in a file of its own name, which is how a start tells that one is pending', async () => {
    expect((await migrationFileNames()).sort()).toEqual([...allNames].sort());
  });

  it('apply every migration once, in order, on an empty database', async () => {
    const empty = migrated ? await emptyDatabase() : await createEmptyDatabase();
    migrated ??= Promise.resolve(empty);
    const { db, url } = empty;
    expect(await migrationStatus(db)).toEqual({ executed: [], pending: allNames });
    expect(await migrateUp(db, url)).toEqual(allNames);
    expect(await migrationStatus(db)).toEqual({ executed: allNames, pending: [] });
  });

  it('do nothing when run again', async () => {
    const { db, url } = await migratedDatabase();
    expect(await migrateUp(db, url)).toEqual([]);
    const rows = await queryRows<{ name: string }>(db, 'select name from atrium_migrations order by id');
    expect(rows.map((r) => r.name)).toEqual(allNames);
  });

  // That such a process loads no MikroORM at all is checked on a service process
  // (test/platform/lean-start.test.ts).
  it('find nothing to do when a process opens an up-to-date database, and leave it serving', async () => {
    const { db, url } = await migratedDatabase();
    // Opened anew, as a starting process would: the one that migrated has the migrator loaded.
    const again = url
      ? await openDatabase(configFrom({ DATABASE_URL: url }))
      : await openDatabase(configFrom({}), {
          embedded: { loadDataDir: await db.embedded?.pglite.dumpDataDir() },
        });
    try {
      expect(await migrateUp(again, url)).toEqual([]);
      expect(await queryRows(again, 'select 1 as one')).toEqual([{ one: 1 }]);
    } finally {
      await again.close();
    }
  });

  it('create each enumeration type exactly once', async () => {
    const { db } = await migratedDatabase();
    const rows = await queryRows<{ typname: string; n: string }>(
      db,
      `select t.typname, count(*) as n from pg_type t join pg_namespace s on s.oid = t.typnamespace
       where t.typtype = 'e' and s.nspname = 'public' group by t.typname order by t.typname`,
    );
    expect(rows.map((r) => r.typname)).toEqual([...enumTypes].sort());
    expect(rows.every((r) => Number(r.n) === 1)).toBe(true);
  });

  it('store no date of birth anywhere in the schema', async () => {
    const { db } = await migratedDatabase();
    const rows = await queryRows<{ column_name: string }>(
      db,
      `select column_name from information_schema.columns where table_schema = 'public'`,
    );
    const names = rows.map((r) => r.column_name);
    expect(names).toContain('adult_confirmed_at');
    expect(names.filter((n) => /birth|dob|(^|_)age$/.test(n))).toEqual([]);
  });

  it('enforce case-insensitive username uniqueness in the database itself', async () => {
    const { db } = await migratedDatabase();
    const insert = (id: string, username: string) =>
      queryRows(
        db,
        `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
         values (?, ?, 'x', now(), now())`,
        [id, username],
      );
    await insert('0190a000-0000-7000-8000-000000000001', 'Ada_Lovelace');
    await expect(insert('0190a000-0000-7000-8000-000000000002', 'ada_lovelace')).rejects.toThrow(
      /users_username_folded_key/,
    );
    await expect(insert('0190a000-0000-7000-8000-000000000003', 'bad name!')).rejects.toThrow(
      /users_username_format/,
    );
    const count = await queryRows<{ n: number }>(db, 'select count(*)::int as n from users');
    expect(count).toEqual([{ n: 1 }]);
  });

  it('give the ranking rows taken before 0026 the tags and category their worlds have', async () => {
    const { db } = await emptyDatabase();
    await withMigrator(db, (migrator) => migrator.up({ to: '0025_admin_indexes' }));
    const execute = (sql: string, params: unknown[] = []) => queryRows(db, sql, params);
    const [owner, tagged, bare] = [1, 2, 3].map((n) => `0190a000-0000-7000-8000-00000000002${n}`);
    await execute(
      `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
       values (?, 'rank_owner', 'x', now(), now())`,
      [owner],
    );
    for (const world of [tagged, bare]) {
      await execute('insert into worlds (id, owner_id, name) values (?, ?, ?)', [world, owner, world]);
      await execute(
        `insert into discovery_ranks (snapshot_at, world_id, popular, trending, world_created_at)
         values ('2026-11-28T10:00:00Z', ?, 1, 1, now())`,
        [world],
      );
    }
    await execute(
      `insert into world_discovery (world_id, tags, category, updated_at) values (?, '{racing,co_op}', 'competitive', now())`,
      [tagged],
    );

    await withMigrator(db, (migrator) => migrator.up());

    const rows = await queryRows<{ world_id: string; tags: string[]; category: string | null }>(
      db,
      'select world_id, tags, category from discovery_ranks order by world_id',
    );
    expect(rows).toEqual([
      { world_id: tagged, tags: ['racing', 'co_op'], category: 'competitive' },
      { world_id: bare, tags: [], category: null },
    ]);
  });

  it.skipIf(!process.env.DATABASE_URL)(
    'apply on Postgres even when the service bounds each query below what building an index takes',
    async () => {
      const { url } = await emptyDatabase();
      const bounded = await openDatabase(configFrom({ DATABASE_URL: url, DATABASE_QUERY_TIMEOUT_MS: 5 }));
      try {
        await expect(queryRows(bounded, 'select pg_sleep(0.2)')).rejects.toThrow();
        expect(await migrateUp(bounded, url)).toEqual(allNames);
      } finally {
        await bounded.close();
      }
    },
  );

  it.skipIf(!process.env.DATABASE_URL)(
    'apply each migration once when two processes start at the same time against one Postgres',
    async () => {
      const { db: first, url } = await emptyDatabase();
      const second: Database = await openDatabase(configFrom({ DATABASE_URL: url }));
      try {
        const results = await Promise.all([migrateUp(first, url), migrateUp(second, url)]);
        expect(results.flat().sort()).toEqual([...allNames].sort());
        expect(results.some((applied) => applied.length === 0)).toBe(true);
        const rows = await queryRows(first, 'select name from atrium_migrations');
        expect(rows).toHaveLength(allNames.length);
      } finally {
        await second.close();
      }
    },
  );
});
