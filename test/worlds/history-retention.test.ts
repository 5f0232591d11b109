import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { RetentionSettings } from '../../src/modules/worlds/history-retention.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { type TestApp, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';
import { batch, contentState, retentionOf, roomPayloads } from './content-fixtures.js';

/** A revision as stored: enough to rebuild any state of the world. */
interface Stored {
  id: number;
  x: number;
  hex: string | null;
  createdAt: number;
}

/** Revisions by chunk (by x), each chunk's in id order. */
function byChunk(revisions: readonly Stored[]): Stored[][] {
  const chunks = new Map<number, Stored[]>();
  for (const r of revisions) chunks.set(r.x, [...(chunks.get(r.x) ?? []), r]);
  return [...chunks.values()];
}

/** Each chunk (by x) as of revision `at`: its newest revision at or below it, unless a tombstone. */
function stateAt(revisions: readonly Stored[], at: number): Map<number, string> {
  const newest = new Map<number, Stored>();
  for (const r of revisions) if (r.id <= at && (newest.get(r.x)?.id ?? 0) < r.id) newest.set(r.x, r);
  const state = new Map<number, string>();
  for (const [x, r] of newest) if (r.hex !== null) state.set(x, r.hex);
  return state;
}

async function storedRevisions(app: TestApp, worldId: string): Promise<Stored[]> {
  const rows = await queryRows<{ id: string; x: number; hex: string | null; created_at: Date }>(
    app.db,
    `select id::text as id, x, encode(payload, 'hex') as hex, created_at
     from chunk_revisions where world_id = ? order by chunk_revisions.id`,
    [worldId],
  );
  return rows.map((r) => ({
    id: Number(r.id),
    x: r.x,
    hex: r.hex,
    createdAt: new Date(r.created_at).getTime(),
  }));
}

async function horizonOf(app: TestApp, worldId: string): Promise<number> {
  const [row] = await queryRows<{ h: string }>(
    app.db,
    'select history_horizon::text as h from worlds where id = ?',
    [worldId],
  );
  return Number(row?.h);
}

/** One commit: chunks (by x, each once) written with a payload tag, or deleted (null). */
const commitArbitrary = fc.uniqueArray(
  fc.record({ x: fc.integer({ min: 0, max: 3 }), tag: fc.option(fc.integer({ min: 0, max: 9 })) }),
  { minLength: 1, maxLength: 4, selector: (op) => op.x },
);

describe('revision retention', () => {
  // The property makes a world per run, all as one user: more than the per-user creation rate allows.
  const app = useTestApp({ CREATE_RATE_LIMIT_COUNT: 100_000 });
  let owner: TokenResponse;
  beforeAll(async () => {
    owner = await registerUser(app());
  });

  const retention = (settings: RetentionSettings) => retentionOf(app(), settings);

  /** A world and a way to commit to it; deletes of chunks that are not live are left out. */
  async function world() {
    const { worldId, mainRoomId: room } = await createWorld(app(), owner.access_token);
    const live = new Set<number>();
    let contentRevision = 0;
    const commit = async (ops: { x: number; tag: number | null }[]) => {
      const writes = ops
        .filter((op) => op.tag !== null || live.has(op.x))
        .map((op) =>
          op.tag === null
            ? { room_id: room, x: op.x, y: 0, z: 0, delete: true as const }
            : { room_id: room, x: op.x, y: 0, z: 0, payload: chunkBytes(`t${op.tag}`, op.x) },
        );
      if (writes.length === 0) return;
      const response = await batch(app(), owner.access_token, worldId, contentRevision, writes);
      expect(response.statusCode, response.body).toBe(200);
      contentRevision = response.json().content_revision;
      for (const op of ops) op.tag === null ? live.delete(op.x) : live.add(op.x);
    };
    return { worldId, room, commit };
  }

  it("keeps every state from the horizon on exactly, deletes exactly what the horizon supersedes, caps each chunk, and takes what it deletes off the world's stored bytes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(commitArbitrary, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 2 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 2, maxLength: 2 }),
        async (phases, maxRevisions, cutoffs) => {
          const settings = { retentionSeconds: 3600, maxRevisions };
          const { worldId, commit } = await world();
          const everything = new Map<number, Stored>();
          let horizon = 0;
          let checkedThrough = 0;
          for (const [phase, commits] of phases.entries()) {
            for (const ops of commits) await commit(ops);
            const before = await storedRevisions(app(), worldId);
            for (const r of before) everything.set(r.id, r);
            if (before.every((r) => r.id <= checkedThrough)) continue; // nothing written: no pass due
            // The cutoff falls somewhere among the revisions' times (or before them all).
            const times = before.map((r) => r.createdAt);
            const cutoff = Math.floor(
              Math.min(...times) + (cutoffs[phase] as number) * (Math.max(...times) + 1 - Math.min(...times)),
            );
            const aged = Math.max(0, ...before.filter((r) => r.createdAt <= cutoff).map((r) => r.id));
            const capped = byChunk(before)
              .filter(
                (revisions) =>
                  revisions.some((r) => r.id > checkedThrough) && revisions.length >= maxRevisions,
              )
              .map((revisions) => (revisions.at(-maxRevisions) as Stored).id);
            horizon = Math.max(horizon, aged, ...capped);
            checkedThrough = Math.max(...before.map((r) => r.id));

            await retention(settings).runDue(new Date(cutoff + settings.retentionSeconds * 1000));

            expect(await horizonOf(app(), worldId)).toBe(horizon);
            const after = await storedRevisions(app(), worldId);
            const superseded = (r: Stored) =>
              r.id < horizon && before.some((s) => s.x === r.x && s.id > r.id && s.id <= horizon);
            expect(after.map((r) => r.id)).toEqual(before.filter((r) => !superseded(r)).map((r) => r.id));
            for (const revisions of byChunk(after))
              expect(revisions.length).toBeLessThanOrEqual(maxRevisions);
            // The pass gave back exactly the bytes of what it deleted.
            const bytes = await contentState(app(), worldId);
            expect(bytes.stored).toBe(bytes.recomputed);
            const all = [...everything.values()];
            for (const at of [horizon, ...all.map((r) => r.id).filter((id) => id >= horizon)])
              expect(stateAt(after, at)).toEqual(stateAt(all, at));
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it('schedules the next pass retentionSeconds after the oldest revision above the horizon, and none once nothing is above it', async () => {
    const { worldId, commit } = await world();
    await commit([{ x: 0, tag: 1 }]);
    await commit([{ x: 0, tag: 2 }]);
    const dueAt = async () =>
      (
        await queryRows<{ due: Date | null }>(
          app().db,
          'select history_due_at as due from worlds where id = ?',
          [worldId],
        )
      )[0]?.due ?? null;
    const [first] = await storedRevisions(app(), worldId);
    await retention({ retentionSeconds: 3600, maxRevisions: 32 }).runDue(new Date());
    expect(await horizonOf(app(), worldId)).toBe(0);
    expect(new Date((await dueAt()) as Date).getTime()).toBe((first?.createdAt as number) + 3600_000);
    // Every revision aged: the horizon reaches the newest, and no pass is due until the next write.
    await retention({ retentionSeconds: 3600, maxRevisions: 32 }).runDue(new Date(Date.now() + 2 * 3600_000));
    expect(await horizonOf(app(), worldId)).toBeGreaterThan(0);
    expect(await dueAt()).toBeNull();
  });

  it('ends a pass run in the millisecond its oldest revision above the horizon ages, however many microseconds are left', async () => {
    const { worldId, commit } = await world();
    await commit([{ x: 0, tag: 1 }]);
    // A second revision 700 µs younger, the chunk's head, as SQL (an import, a seed) may write it:
    // the service's own writes carry JavaScript's milliseconds.
    await queryRows(
      app().db,
      `with added as (
         insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone, author_id, created_at)
         select nextval('chunk_revision_ids'), chunk_id, world_id, room_id, x, y, z, payload, tombstone, author_id,
                created_at + interval '700 microseconds'
         from chunk_revisions where world_id = ?
         returning id, chunk_id, world_id
       ), head as (
         update chunks c set revision = added.id from added where c.id = added.chunk_id
       )
       update worlds w set content_revision = added.id from added where w.id = added.world_id`,
      [worldId],
    );
    const [first] = await storedRevisions(app(), worldId);
    const retentionSeconds = 3600;
    // The first revision has aged by `now`, the second not yet: the next pass is due 0.7 ms later.
    const now = new Date((first?.createdAt as number) + retentionSeconds * 1000);
    const pruning = retention({ retentionSeconds, maxRevisions: 32 });
    const guard = setTimeout(() => void pruning.stop(), 5_000);
    const turns = await pruning.runDue(now);
    clearTimeout(guard);
    expect(turns).toBe(1);
    expect(await horizonOf(app(), worldId)).toBe(first?.id);
  });

  it('works through a long history in short turns, until each chunk keeps the one revision its state needs, whose bytes alone stay counted', async () => {
    const { worldId, room, commit } = await world();
    // 300 chunks written 4 times: 1,200 revisions, many windows of a statement each.
    for (let round = 0; round < 4; round++)
      await commit(Array.from({ length: 300 }, (_, x) => ({ x, tag: round })));
    const history = await storedRevisions(app(), worldId);
    const before = await roomPayloads(app(), owner.access_token, worldId, room);

    const turns = await retention({ retentionSeconds: 3600, maxRevisions: 32 }).runDue(
      new Date(Date.now() + 2 * 3600 * 1000),
    );
    expect(turns).toBeGreaterThan(1);
    const contentRevision = history.at(-1)?.id as number;
    expect(await horizonOf(app(), worldId)).toBe(contentRevision);
    const kept = await storedRevisions(app(), worldId);
    expect(kept).toEqual(history.filter((r) => r.id > contentRevision - 300));
    expect(await roomPayloads(app(), owner.access_token, worldId, room)).toEqual(before);
  });

  // The embedded database is one session: no second transaction can hold the row meanwhile.
  it.skipIf(!process.env.DATABASE_URL)(
    'passes over a world whose row a writer holds without waiting for it, and prunes it on the next run',
    async () => {
      const { worldId, commit } = await world();
      await commit([{ x: 0, tag: 1 }]);
      await commit([{ x: 0, tag: 2 }]);
      const pruning = retention({ retentionSeconds: 3600, maxRevisions: 1 });
      let release = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let locked = () => {};
      const isLocked = new Promise<void>((resolve) => {
        locked = resolve;
      });
      const writer = transaction(app().db.data, async (tx) => {
        await executeBound(tx, 'select 1 from worlds where id = $1 for update', [worldId]);
        locked();
        await released;
      });
      await isLocked;
      await pruning.runDue(new Date());
      expect(await horizonOf(app(), worldId)).toBe(0);
      release();
      await writer;
      await pruning.runDue(new Date());
      expect(await horizonOf(app(), worldId)).toBeGreaterThan(0);
    },
  );

  it('refuses a rollback before the horizon with 409 and the horizon, writing nothing; the history page tells the horizon', async () => {
    const { worldId, room, commit } = await world();
    const rollback = (revision: number) =>
      app().http.inject({
        method: 'POST',
        url: `/api/worlds/${worldId}/rollback`,
        headers: bearer(owner.access_token),
        payload: { revision },
      });
    for (let round = 0; round < 4; round++)
      await commit([
        { x: 0, tag: round },
        { x: 1, tag: round },
      ]);
    const history = await storedRevisions(app(), worldId);
    // Keep two revisions a chunk: the horizon moves to each chunk's second newest.
    await retention({ retentionSeconds: 3600, maxRevisions: 2 }).runDue(new Date());
    const horizon = await horizonOf(app(), worldId);
    expect(horizon).toBe(history.at(-3)?.id);
    const kept = await storedRevisions(app(), worldId);

    const refused = await rollback(horizon - 1);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'CONFLICT', horizon });
    expect(await storedRevisions(app(), worldId)).toEqual(kept);
    const page = await app().http.inject({
      method: 'GET',
      url: `/api/worlds/${worldId}/revisions`,
      headers: bearer(owner.access_token),
    });
    expect(page.json().horizon).toBe(horizon);

    expect((await rollback(horizon)).statusCode).toBe(200);
    const restored = await roomPayloads(app(), owner.access_token, worldId, room);
    const expected = stateAt(history, horizon);
    expect(
      new Map([...restored].map(([key, bytes]) => [Number(key.split(',')[0]), bytes.toString('hex')])),
    ).toEqual(expected);
    // 0 (the empty world) needs no revision: it stays reachable past any horizon.
    expect((await rollback(0)).statusCode).toBe(200);
    expect((await roomPayloads(app(), owner.access_token, worldId, room)).size).toBe(0);
  });
});

describe('revision retention on every node', () => {
  const app = useTestApp({ WORLD_HISTORY_PRUNE_INTERVAL_SECONDS: 1, WORLD_HISTORY_MAX_REVISIONS: 2 });

  it('prunes a chunk written often down to its cap on its own, at the pruning interval', async () => {
    const owner = await registerUser(app());
    const { worldId, mainRoomId: room } = await createWorld(app(), owner.access_token);
    let revision = 0;
    for (let round = 0; round < 6; round++) {
      const response = await batch(app(), owner.access_token, worldId, revision, [
        { room_id: room, x: 0, y: 0, z: 0, payload: chunkBytes(`r${round}`) },
      ]);
      revision = response.json().content_revision;
    }
    await expect
      .poll(async () => (await storedRevisions(app(), worldId)).length, { timeout: 30_000, interval: 100 })
      .toBe(2);
  });
});
