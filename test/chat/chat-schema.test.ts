import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationsList } from '../../migrations/index.js';
import type { Database } from '../../src/platform/db.js';
import { migrateUp, migrationStatus } from '../../src/platform/migrate.js';
import {
  createEmptyDatabase,
  createTestDatabase,
  insertUser,
  queryRows,
  type TestDatabase,
} from '../helpers/database.js';

/** The chat tables (migrations 0002 and 0011) as the database enforces them, below any service code. */

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const sql = <Row = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  queryRows<Row>(t.db, text, params);
const count = async (text: string, params: unknown[] = []) =>
  Number((await sql<{ n: string }>(`select count(*)::text as n from ${text}`, params))[0]?.n);

const user = () => insertUser(t.db);

/** A conversation of two new users with one message from each; returns the ids. */
async function conversation() {
  const [a, b] = [await user(), await user()].sort();
  const id = randomUUID();
  await sql('insert into conversations (id, user_a_id, user_b_id) values (?, ?, ?)', [id, a, b]);
  await sql('insert into conversation_participants (conversation_id, user_id) values (?, ?), (?, ?)', [
    id,
    a,
    id,
    b,
  ]);
  const messages = [randomUUID(), randomUUID()];
  await sql(
    `insert into messages (id, conversation_id, sender_id, body) values (?, ?, ?, 'hi'), (?, ?, ?, 'hello')`,
    [messages[0], id, a, messages[1], id, b],
  );
  return { id, a: a as string, b: b as string, messages };
}

async function worldWithRoom(owner: string) {
  const world = randomUUID();
  const room = randomUUID();
  await sql(`insert into worlds (id, owner_id, name) values (?, ?, 'w')`, [world, owner]);
  await sql(`insert into rooms (id, world_id, name) values (?, ?, 'main')`, [room, world]);
  return { world, room };
}

const linksToWorlds = (db: Database) =>
  queryRows<{ conname: string }>(
    db,
    `select conname from pg_constraint where conrelid = 'messages'::regclass and contype = 'f' order by conname`,
  );
const ALL_MESSAGE_KEYS = [
  { conname: 'messages_conversation_id_fkey' },
  { conname: 'messages_group_id_fkey' },
  { conname: 'messages_party_id_fkey' },
  { conname: 'messages_room_id_fkey' },
  { conname: 'messages_sender_id_fkey' },
  { conname: 'messages_world_id_fkey' },
];

describe('chat schema', () => {
  it('links messages to conversations, senders, worlds, rooms, groups and parties on a new database', async () => {
    expect(await linksToWorlds(t.db)).toEqual(ALL_MESSAGE_KEYS);
  });

  it('refuses a conversation whose pair is not ordered, or a second one for the same pair', async () => {
    const [low, high] = [await user(), await user()].sort();
    await expect(
      sql('insert into conversations (id, user_a_id, user_b_id) values (?, ?, ?)', [randomUUID(), high, low]),
    ).rejects.toThrow(/conversations_ordered_pair/);
    await sql('insert into conversations (id, user_a_id, user_b_id) values (?, ?, ?)', [
      randomUUID(),
      low,
      high,
    ]);
    await expect(
      sql('insert into conversations (id, user_a_id, user_b_id) values (?, ?, ?)', [randomUUID(), low, high]),
    ).rejects.toThrow(/conversations_pair_key/);
    expect(await count('conversations where user_a_id = ? or user_a_id = ?', [low, high])).toBe(1);
  });

  it('refuses a message without exactly one target: a conversation, or a world with an optional room', async () => {
    const { id, a } = await conversation();
    const { world, room } = await worldWithRoom(a);
    const insert = (conversationId: string | null, worldId: string | null, roomId: string | null) =>
      sql(
        'insert into messages (id, conversation_id, world_id, room_id, sender_id, body) values (?, ?, ?, ?, ?, ?)',
        [randomUUID(), conversationId, worldId, roomId, a, 'x'],
      );
    for (const [c, w, r] of [
      [null, null, null],
      [id, world, null],
      [id, null, room],
      [null, null, room],
    ] as const)
      await expect(insert(c, w, r)).rejects.toThrow(/messages_one_target/);
    await insert(null, world, null);
    await insert(null, world, room);
    expect(await count('messages where world_id = ?', [world])).toBe(2);
  });

  it("refuses a party message with a second target, and deletes a party's messages with the party", async () => {
    const { id, a } = await conversation();
    const { world } = await worldWithRoom(a);
    const party = randomUUID();
    await sql(
      `with p as (insert into parties (id, leader_id, max_size, created_at) values (?, ?, 8, now()) returning id)
       insert into party_members (party_id, user_id, joined_at) select id, ?, now() from p`,
      [party, a, a],
    );
    const insert = (partyId: string, other: { conversation_id?: string; world_id?: string }) =>
      sql(
        'insert into messages (id, party_id, conversation_id, world_id, sender_id, body) values (?, ?, ?, ?, ?, ?)',
        [randomUUID(), partyId, other.conversation_id ?? null, other.world_id ?? null, a, 'x'],
      );
    await expect(insert(party, { conversation_id: id })).rejects.toThrow(/messages_one_target/);
    await expect(insert(party, { world_id: world })).rejects.toThrow(/messages_one_target/);
    await insert(party, {});
    expect(await count('messages where party_id = ?', [party])).toBe(1);
    await sql('delete from parties where id = ?', [party]);
    expect(await count('messages where party_id = ?', [party])).toBe(0);
    expect(await count('messages where conversation_id = ?', [id])).toBe(2);
  });

  it.each([
    ['empty', ''],
    ['over 2000 characters', 'x'.repeat(2001)],
  ])('refuses a message body that is %s', async (_case, body) => {
    const { id, a } = await conversation();
    await expect(
      sql('insert into messages (id, conversation_id, sender_id, body) values (?, ?, ?, ?)', [
        randomUUID(),
        id,
        a,
        body,
      ]),
    ).rejects.toThrow(/messages_body_length/);
    expect(await count('messages where conversation_id = ?', [id])).toBe(2);
  });

  it("deletes a user's conversations with their participants and messages, for either side of the pair", async () => {
    for (const side of ['a', 'b'] as const) {
      const c = await conversation();
      await sql('delete from users where id = ?', [c[side]]);
      expect(await count('conversations where id = ?', [c.id])).toBe(0);
      expect(await count('conversation_participants where conversation_id = ?', [c.id])).toBe(0);
      expect(await count('messages where conversation_id = ?', [c.id])).toBe(0);
    }
  });

  it('keeps world and room messages of a deleted sender with a null sender, and deletes them with their room or world', async () => {
    const owner = await user();
    const sender = await user();
    const { world, room } = await worldWithRoom(owner);
    const [inWorld, inRoom] = [randomUUID(), randomUUID()];
    await sql(
      `insert into messages (id, world_id, room_id, sender_id, body) values (?, ?, null, ?, 'w'), (?, ?, ?, ?, 'r')`,
      [inWorld, world, sender, inRoom, world, room, sender],
    );
    await sql('delete from users where id = ?', [sender]);
    expect(
      await sql('select sender_id, body from messages where world_id = ? order by body', [world]),
    ).toEqual([
      { sender_id: null, body: 'r' },
      { sender_id: null, body: 'w' },
    ]);
    await sql('delete from rooms where id = ?', [room]);
    expect(await count('messages where id = ?', [inRoom])).toBe(0);
    expect(await count('messages where id = ?', [inWorld])).toBe(1);
    await sql('delete from worlds where id = ?', [world]);
    expect(await count('messages where id = ?', [inWorld])).toBe(0);
  });

  it('keeps reports of deleted messages and users with null links, one report per reporter and message', async () => {
    const { messages, a, b } = await conversation();
    const moderator = await user();
    const report = randomUUID();
    await sql(
      `insert into message_reports (id, message_id, reporter_id, moderator_id, reason) values (?, ?, ?, ?, 'spam')`,
      [report, messages[1], a, moderator],
    );
    await expect(
      sql(`insert into message_reports (id, message_id, reporter_id, reason) values (?, ?, ?, 'again')`, [
        randomUUID(),
        messages[1],
        a,
      ]),
    ).rejects.toThrow(/message_reports_once/);
    await sql('delete from users where id = ?', [moderator]);
    await sql('delete from messages where id = ?', [messages[1]]);
    await sql('delete from users where id = ?', [b]);
    expect(
      await sql(
        'select message_id, reporter_id, moderator_id, state::text as state from message_reports where id = ?',
        [report],
      ),
    ).toEqual([{ message_id: null, reporter_id: a, moderator_id: null, state: 'open' }]);
    await sql('delete from users where id = ?', [a]);
    expect(await sql('select reporter_id from message_reports where id = ?', [report])).toEqual([
      { reporter_id: null },
    ]);
  });
});

describe('migrations 0002, 0011, 0022 and 0038 on a database migrated before they existed', () => {
  it('apply after the later migrations that were already there, with every link of the messages', async () => {
    const empty = await createEmptyDatabase();
    try {
      const names = migrationsList.map((m) => m.name);
      const { db, url } = empty;
      // A database from before chat: every migration but those of the messages table (0002, 0011,
      // 0022 and 0038, group and party chat's columns) recorded as applied.
      const chatMigrations = [
        '0002_chat',
        '0011_conversation_last_read',
        '0022_group_chat',
        '0038_party_chat',
      ];
      await migrateUp(db, url);
      await queryRows(db, 'delete from atrium_migrations where name in (?, ?, ?, ?)', chatMigrations);
      await queryRows(db, 'drop table message_reports, messages, conversation_participants, conversations');
      expect((await migrationStatus(db)).pending).toEqual(chatMigrations);
      expect(await migrateUp(db, url)).toEqual(chatMigrations);
      expect((await migrationStatus(db)).executed.sort()).toEqual([...names].sort());
      expect(await linksToWorlds(db)).toEqual(ALL_MESSAGE_KEYS);
      const [column] = await queryRows(
        db,
        `select data_type from information_schema.columns
         where table_name = 'conversation_participants' and column_name = 'last_read_at'`,
      );
      expect(column).toEqual({ data_type: 'timestamp with time zone' });
    } finally {
      await empty.drop();
    }
  });
});
