import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsList } from '../../migrations/index.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { migrateUp, migrationStatus, withMigrator } from '../../src/platform/migrate.js';
import {
  createEmptyDatabase,
  createTestDatabase,
  insertUser,
  queryRows,
  type TestDatabase,
} from '../helpers/database.js';

/** The world content tables as the database enforces them, below any service code. */

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const sql = <Row = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  queryRows<Row>(t.db, text, params);

const user = () => insertUser(t.db);

/** A world with a room and one chunk of two revisions (the second by `author`); returns the ids. */
async function worldWithRevisions(owner: string, author = owner) {
  const world = randomUUID();
  const room = randomUUID();
  await sql(`insert into worlds (id, owner_id, name) values (?, ?, 'w')`, [world, owner]);
  await sql(`insert into rooms (id, world_id, name) values (?, ?, 'main')`, [room, world]);
  const [first, second] = (
    await sql<{ id: string }>(
      `select nextval('chunk_revision_ids')::text as id union all select nextval('chunk_revision_ids')::text`,
    )
  ).map((r) => r.id);
  const [chunk] = await sql<{ id: string }>(
    `insert into chunks (room_id, world_id, x, y, z, revision) values (?, ?, 1, -2, 3, ?) returning id::text as id`,
    [room, world, second],
  );
  for (const [id, by] of [
    [first, owner],
    [second, author],
  ])
    await sql(
      `insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone, author_id)
       values (?, ?, ?, ?, 1, -2, 3, '\\x00ff'::bytea, false, ?)`,
      [id, chunk?.id, world, room, by],
    );
  return { world, room, chunk: chunk?.id as string, revisions: [first, second] as string[] };
}

const revisionCount = async (world: string) =>
  Number(
    (
      await sql<{ n: string }>('select count(*)::text as n from chunk_revisions where world_id = ?', [world])
    )[0]?.n,
  );

describe('world content schema', () => {
  it('refuses to update a chunk revision', async () => {
    const { revisions } = await worldWithRevisions(await user());
    await expect(
      sql(`update chunk_revisions set payload = '\\x01'::bytea where id = ?`, [revisions[0]]),
    ).rejects.toThrow(/append-only/);
    const [row] = await sql<{ hex: string }>(
      `select encode(payload, 'hex') as hex from chunk_revisions where id = ?`,
      [revisions[0]],
    );
    expect(row?.hex).toBe('00ff');
  });

  it('refuses to delete a chunk revision, even by the author setting null by hand', async () => {
    const { world, revisions } = await worldWithRevisions(await user());
    await expect(sql('delete from chunk_revisions where id = ?', [revisions[1]])).rejects.toThrow(
      /append-only/,
    );
    await expect(
      sql('update chunk_revisions set author_id = null where id = ?', [revisions[1]]),
    ).rejects.toThrow(/append-only/);
    expect(await revisionCount(world)).toBe(2);
  });

  /** Runs `statement` in a transaction, armed as the pruning pass arms it when `armed`. */
  const inTransaction = (statement: string, params: unknown[], armed: boolean) =>
    transaction(t.db.data, async (tx) => {
      if (armed) await executeBound(tx, `select set_config('atrium.pruning_revisions', 'on', true)`, []);
      await executeBound(tx, statement, params);
    });

  it("lets the pruning pass delete only a revision below its world's horizon that its chunk has moved past", async () => {
    const { world, chunk, revisions } = await worldWithRevisions(await user());
    const [older, head] = revisions as [string, string];
    const deleteRevision = 'delete from chunk_revisions where id = $1';
    await sql('update worlds set history_horizon = ? where id = ?', [head, world]);
    // Not armed: refused, as every DELETE.
    await expect(inTransaction(deleteRevision, [older], false)).rejects.toThrow(/append-only/);
    // Armed: never the chunk's head, never an UPDATE.
    await expect(inTransaction(deleteRevision, [head], true)).rejects.toThrow(/append-only/);
    await expect(
      inTransaction(`update chunk_revisions set payload = '\\x01'::bytea where id = $1`, [older], true),
    ).rejects.toThrow(/append-only/);
    // Armed, but the revision is not below the horizon.
    await sql('update worlds set history_horizon = ? where id = ?', [older, world]);
    await expect(inTransaction(deleteRevision, [older], true)).rejects.toThrow(/append-only/);
    expect(await revisionCount(world)).toBe(2);

    await sql('update worlds set history_horizon = ? where id = ?', [head, world]);
    await inTransaction(deleteRevision, [older], true);
    const left = await sql<{ id: string }>('select id::text as id from chunk_revisions where chunk_id = ?', [
      chunk,
    ]);
    expect(left).toEqual([{ id: head }]);
    // The setting lasts one transaction: the next delete is refused again.
    await expect(sql('delete from chunk_revisions where id = ?', [head])).rejects.toThrow(/append-only/);
  });

  it('deletes rooms, chunks and revisions with their world', async () => {
    const { world } = await worldWithRevisions(await user());
    await sql('delete from worlds where id = ?', [world]);
    expect(await revisionCount(world)).toBe(0);
    expect(await sql('select 1 from rooms where world_id = ?', [world])).toHaveLength(0);
    expect(await sql('select 1 from chunks where world_id = ?', [world])).toHaveLength(0);
  });

  it("deletes a user's worlds with the account and keeps their revisions elsewhere with a null author", async () => {
    const owner = await user();
    const editor = await user();
    const own = await worldWithRevisions(editor);
    const other = await worldWithRevisions(owner, editor);
    await sql('delete from users where id = ?', [editor]);
    expect(await sql('select 1 from worlds where id = ?', [own.world])).toHaveLength(0);
    const rows = await sql<{ id: string; author_id: string | null; hex: string }>(
      `select id::text as id, author_id, encode(payload, 'hex') as hex from chunk_revisions where world_id = ? order by chunk_revisions.id`,
      [other.world],
    );
    expect(rows).toEqual([
      { id: other.revisions[0], author_id: owner, hex: '00ff' },
      { id: other.revisions[1], author_id: null, hex: '00ff' },
    ]);
  });

  it('keeps one chunk per room and position', async () => {
    const { world, room } = await worldWithRevisions(await user());
    await expect(
      sql(`insert into chunks (room_id, world_id, x, y, z, revision) values (?, ?, 1, -2, 3, 1)`, [
        room,
        world,
      ]),
    ).rejects.toThrow(/chunks_position_key/);
  });

  it('keeps room names unique per world regardless of case', async () => {
    const { world } = await worldWithRevisions(await user());
    await expect(
      sql(`insert into rooms (id, world_id, name) values (?, ?, 'MAIN')`, [randomUUID(), world]),
    ).rejects.toThrow(/rooms_world_name_key/);
  });

  it('refuses a revision whose payload and tombstone flag disagree', async () => {
    const { world, room, chunk } = await worldWithRevisions(await user());
    await expect(
      sql(
        `insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone)
         values (nextval('chunk_revision_ids'), ?, ?, ?, 1, -2, 3, null, false)`,
        [chunk, world, room],
      ),
    ).rejects.toThrow(/chunk_revisions_payload_presence/);
  });
});

describe('migration 0005 on a database migrated before it existed', () => {
  it('applies after the later migrations that were already there', async () => {
    const empty = await createEmptyDatabase();
    try {
      const names = migrationsList.map((m) => m.name);
      const { db, url } = empty;
      // A database from before world content: every migration but 0005 recorded as applied.
      await migrateUp(db, url);
      await queryRows(db, `delete from atrium_migrations where name = '0005_world_content'`);
      await queryRows(
        db,
        // cascade: the chat messages' keys to worlds and rooms (0011) go too; this database stands
        // for one from before world content, which had none.
        'drop table profile_favorites, chunk_revisions, chunks, rooms, worlds cascade; drop sequence chunk_revision_ids; drop function chunk_revisions_append_only',
      );
      expect((await migrationStatus(db)).pending).toEqual(['0005_world_content']);
      expect(await migrateUp(db, url)).toEqual(['0005_world_content']);
      expect((await migrationStatus(db)).executed.sort()).toEqual([...names].sort());
    } finally {
      await empty.drop();
    }
  });
});

describe('migration 0019 on a database that already holds worlds', () => {
  it("computes each world's live content bytes and makes the worlds with history due for a pruning pass", async () => {
    const empty = await createEmptyDatabase();
    try {
      const { db, url } = empty;
      const run = <Row = Record<string, unknown>>(text: string, params: unknown[] = []) =>
        queryRows<Row>(db, text, params);
      // A database from before 0019: everything else applied, 0019 taken back by hand (and 0027,
      // which renames its column, so that both apply again in order).
      await migrateUp(db, url);
      await run(
        `delete from atrium_migrations where name in ('0019_world_content_limits', '0027_world_stored_bytes')`,
      );
      await run(`alter table worlds drop column stored_bytes, drop column history_horizon,
        drop column history_pruned_through, drop column history_checked_through, drop column history_due_at`);
      await run('drop index chunks_world_id_id_idx; create index chunks_world_id_idx on chunks (world_id)');
      const owner = randomUUID();
      await run(
        `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
         values (?, 'migrated', 'x', now(), now())`,
        [owner],
      );
      const [full, empty0] = [randomUUID(), randomUUID()];
      const room = randomUUID();
      await run(
        `insert into worlds (id, owner_id, name, content_revision) values (?, ?, 'full', 3), (?, ?, 'empty', 0)`,
        [full, owner, empty0, owner],
      );
      await run(`insert into rooms (id, world_id, name) values (?, ?, 'main')`, [room, full]);
      // Chunk 1 live at its second revision (5 bytes, the first had 3), chunk 2 deleted.
      await run(
        `insert into chunks (id, room_id, world_id, x, y, z, revision, deleted) overriding system value
        values (901, ?, ?, 0, 0, 0, 2, false), (902, ?, ?, 1, 0, 0, 3, true)`,
        [room, full, room, full],
      );
      await run(
        `insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone) values
        (1, 901, ?, ?, 0, 0, 0, '\\x010203'::bytea, false),
        (2, 901, ?, ?, 0, 0, 0, '\\x0102030405'::bytea, false),
        (3, 902, ?, ?, 1, 0, 0, null, true)`,
        [full, room, full, room, full, room],
      );

      const applied = await withMigrator(db, (migrator) => migrator.up({ to: '0019_world_content_limits' }));
      expect(applied.map((m) => m.name)).toEqual(['0019_world_content_limits']);
      const rows = await run<{ id: string; content_bytes: string; due: boolean }>(
        'select id, content_bytes::text as content_bytes, history_due_at is not null as due from worlds',
      );
      expect(rows.sort((a, b) => a.id.localeCompare(b.id))).toEqual(
        [
          { id: full, content_bytes: '5', due: true },
          { id: empty0, content_bytes: '0', due: false },
        ].sort((a, b) => a.id.localeCompare(b.id)),
      );
    } finally {
      await empty.drop();
    }
  });
});

describe('migration 0027 on a database that already holds worlds', () => {
  it("counts each world's kept history with its live payloads in its stored bytes, tombstones weighing nothing", async () => {
    const empty = await createEmptyDatabase();
    try {
      const { db } = empty;
      const run = <Row = Record<string, unknown>>(text: string, params: unknown[] = []) =>
        queryRows<Row>(db, text, params);
      const index = migrationsList.findIndex((m) => m.name === '0027_world_stored_bytes');
      await withMigrator(db, (migrator) => migrator.up({ to: migrationsList[index - 1]?.name as string }));
      const owner = randomUUID();
      await run(
        `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
         values (?, 'backfilled', 'x', now(), now())`,
        [owner],
      );
      const [edited, untouched] = [randomUUID(), randomUUID()];
      const [main, hall] = [randomUUID(), randomUUID()];
      // content_bytes as 0019 kept it: the live payloads alone (5 + 4 bytes).
      await run(
        `insert into worlds (id, owner_id, name, content_revision, content_bytes)
         values (?, ?, 'edited', 6, 9), (?, ?, 'untouched', 0, 0)`,
        [edited, owner, untouched, owner],
      );
      await run(`insert into rooms (id, world_id, name) values (?, ?, 'main'), (?, ?, 'hall')`, [
        main,
        edited,
        hall,
        edited,
      ]);
      // Chunk 1 rewritten (3 then 5 bytes), chunk 2 deleted after 2 bytes, chunk 3 in the hall (4 bytes).
      await run(
        `insert into chunks (id, room_id, world_id, x, y, z, revision, deleted) overriding system value
        values (911, ?, ?, 0, 0, 0, 2, false), (912, ?, ?, 1, 0, 0, 5, true), (913, ?, ?, 0, 0, 0, 6, false)`,
        [main, edited, main, edited, hall, edited],
      );
      await run(
        `insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone) values
        (1, 911, ?, ?, 0, 0, 0, '\\x010203'::bytea, false),
        (2, 911, ?, ?, 0, 0, 0, '\\x0102030405'::bytea, false),
        (4, 912, ?, ?, 1, 0, 0, '\\x0102'::bytea, false),
        (5, 912, ?, ?, 1, 0, 0, null, true),
        (6, 913, ?, ?, 0, 0, 0, '\\x01020304'::bytea, false)`,
        [edited, main, edited, main, edited, main, edited, main, edited, hall],
      );

      await withMigrator(db, (migrator) => migrator.up());

      const rows = await run<{ id: string; stored_bytes: string }>(
        'select id, stored_bytes::text as stored_bytes from worlds',
      );
      expect(rows.sort((a, b) => a.id.localeCompare(b.id))).toEqual(
        [
          { id: edited, stored_bytes: '14' },
          { id: untouched, stored_bytes: '0' },
        ].sort((a, b) => a.id.localeCompare(b.id)),
      );
      // The bound on the counter kept its meaning under the new name.
      await expect(run('update worlds set stored_bytes = -1 where id = ?', [untouched])).rejects.toThrow(
        /worlds_stored_bytes_nonnegative/,
      );
    } finally {
      await empty.drop();
    }
  });
});
