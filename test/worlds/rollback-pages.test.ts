import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_CHUNK_BYTES } from '../../protocol/chunk-codec.js';
import { ROLLBACK_PAGE_BYTES, ROLLBACK_PAGE_CHUNKS } from '../../src/modules/worlds/rollback.repository.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';
import { batch, chunkOfSize, contentState, roomPayloads } from './content-fixtures.js';

/**
 * A rollback copies revisions inside the database, page by page. A statement-level trigger on
 * `chunk_revisions` (this file's database only) records how many rows and payload bytes each
 * INSERT statement appended, so the tests see the statements the service ran.
 */
describe('rollback in pages', () => {
  const app = useTestApp();
  const inserts = () =>
    queryRows<{ rows: number; bytes: string }>(
      app().db,
      'select rows, bytes::text as bytes from test_inserts',
    );

  beforeAll(async () => {
    const sql = (text: string) => queryRows(app().db, text);
    await sql('create table test_inserts (rows int not null, bytes bigint not null)');
    await sql(`
      create function test_count_inserts() returns trigger language plpgsql as $$
      begin
        insert into test_inserts select count(*), coalesce(sum(octet_length(payload)), 0) from appended;
        return null;
      end $$`);
    await sql(`
      create trigger test_count_inserts after insert on chunk_revisions
      referencing new table as appended for each statement execute function test_count_inserts()`);
  });
  beforeEach(async () => {
    await queryRows(app().db, 'delete from test_inserts');
  });

  async function world() {
    const owner = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    const rollback = async (revision: number) => {
      await queryRows(app().db, 'delete from test_inserts');
      return app().http.inject({
        method: 'POST',
        url: `/api/worlds/${worldId}/rollback`,
        headers: bearer(owner.access_token),
        payload: { revision },
      });
    };
    return { token: owner.access_token, worldId, room: mainRoomId, rollback };
  }

  it('restores hundreds of changed chunks exactly, each statement restoring at most a page of chunks', async () => {
    const { token, worldId, room, rollback } = await world();
    const first = (x: number) => chunkBytes(`first-${x}`, x);
    const created = await batch(
      app(),
      token,
      worldId,
      0,
      Array.from({ length: 400 }, (_, x) => ({ room_id: room, x, y: 0, z: 0, payload: first(x) })),
    );
    expect(created.statusCode, created.body).toBe(200);
    const target = created.json().content_revision as number;
    const expected = await roomPayloads(app(), token, worldId, room);
    expect(expected.size).toBe(400);
    // 200 chunks changed, 100 deleted, 150 created: 450 to restore, more than one page.
    const changed = await batch(app(), token, worldId, target, [
      ...Array.from({ length: 200 }, (_, x) => ({
        room_id: room,
        x,
        y: 0,
        z: 0,
        payload: chunkBytes(`then-${x}`),
      })),
      ...Array.from({ length: 100 }, (_, i) => ({
        room_id: room,
        x: 200 + i,
        y: 0,
        z: 0,
        delete: true as const,
      })),
      ...Array.from({ length: 150 }, (_, i) => ({
        room_id: room,
        x: 400 + i,
        y: 0,
        z: 0,
        payload: first(400 + i),
      })),
    ]);
    expect(changed.statusCode, changed.body).toBe(200);
    const before = await contentState(app(), worldId);

    const response = await rollback(target);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().restored).toBe(450);
    expect(await roomPayloads(app(), token, worldId, room)).toEqual(expected);
    const statements = await inserts();
    expect(statements.reduce((sum, s) => sum + s.rows, 0)).toBe(450);
    expect(statements.length).toBeGreaterThanOrEqual(Math.ceil(450 / ROLLBACK_PAGE_CHUNKS));
    for (const statement of statements) expect(statement.rows).toBeLessThanOrEqual(ROLLBACK_PAGE_CHUNKS);
    const after = await contentState(app(), worldId);
    expect(after.revisions).toBe(before.revisions + 450);
    expect(after.stored).toBe(after.recomputed);
  });

  it('cuts pages by payload bytes: large chunks take several statements, none copying more than a page of bytes', async () => {
    const { token, worldId, room, rollback } = await world();
    const large = (x: number) => chunkOfSize(`large-${x}`, MAX_CHUNK_BYTES - x);
    // More than a page of bytes, and far fewer chunks than a page holds.
    const count = Math.ceil(ROLLBACK_PAGE_BYTES / MAX_CHUNK_BYTES) + 2;
    let revision = 0;
    for (let x = 0; x < count; x++) {
      const written = await batch(app(), token, worldId, revision, [
        { room_id: room, x, y: 0, z: 0, payload: large(x) },
      ]);
      expect(written.statusCode, written.body).toBe(200);
      revision = written.json().content_revision;
    }
    const target = revision;
    const overwritten = await batch(
      app(),
      token,
      worldId,
      target,
      Array.from({ length: count }, (_, x) => ({
        room_id: room,
        x,
        y: 0,
        z: 0,
        payload: chunkBytes(`small-${x}`),
      })),
    );
    expect(overwritten.statusCode, overwritten.body).toBe(200);

    const response = await rollback(target);
    expect(response.statusCode, response.body).toBe(200);
    const restored = await roomPayloads(app(), token, worldId, room);
    for (let x = 0; x < count; x++) expect(restored.get(`${x},0,0`)?.equals(large(x))).toBe(true);
    const statements = await inserts();
    expect(statements.length).toBeGreaterThanOrEqual(2);
    for (const statement of statements)
      expect(Number(statement.bytes)).toBeLessThanOrEqual(Math.max(ROLLBACK_PAGE_BYTES, MAX_CHUNK_BYTES));
    const after = await contentState(app(), worldId);
    expect(after.stored).toBe(after.recomputed);
  });
});
