import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { RankIndex } from '../../src/modules/leaderboards/rank-index.js';
import { MemoryKv } from '../../src/platform/kv/memory-kv.js';
import { PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createBoard, leaderboardCalls } from './leaderboards.js';

interface Row {
  user_id: string;
  score: number;
  subscore: number;
  updated_at: number;
}
interface Answered {
  user_id: string;
  score: number;
  subscore: number;
  rank: number;
}

/** A seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let state = seed;
  return (below: number) => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state % below;
  };
}

/**
 * Ranks are exact in every answer, whether the rank index or SQL answers them: compared with a
 * reference sorted here from the stored rows, over random submissions with many ties, before the
 * index is built, once it is, after its keys are lost, and after an account deletion.
 */
describe('leaderboard ranks', () => {
  const app = useTestApp({ LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: 1000 });
  const call = leaderboardCalls(app);
  const next = random(20261129);
  let users: TokenResponse[];
  let reader: TokenResponse;
  /** A user who never submits. */
  let outsider: TokenResponse;
  let boardId: string;

  beforeAll(async () => {
    const admin = await registerWithRole(app(), 'admin');
    users = await Promise.all(Array.from({ length: 30 }, () => registerUser(app())));
    reader = users[0] as TokenResponse;
    outsider = await registerUser(app());
    boardId = await createBoard(app(), admin.access_token, { id: `ranks-${process.pid}`, operator: 'set' });
    // Scores and subscores from small ranges, some sent at once: ties on both, and on the time.
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        users
          .filter(() => next(3) > 0)
          .map((user) =>
            call('POST', `/api/leaderboards/${boardId}/records`, user.access_token, {
              score: next(5),
              subscore: next(3),
            }).then((answer) => expect(answer.status).toBe(200)),
          ),
      );
    }
  });

  /** The stored records in the contract's order: score desc, subscore desc, earlier update, user id. */
  async function reference(): Promise<Row[]> {
    const rows = await queryRows<{ user_id: string; score: string; subscore: string; updated_at: Date }>(
      app().db,
      `select r.user_id, r.score, r.subscore, r.updated_at from leaderboard_records r
       join leaderboards b on b.ref = r.standings_ref where b.id = ?`,
      [boardId],
    );
    return rows
      .map((row) => ({
        user_id: row.user_id,
        score: Number(row.score),
        subscore: Number(row.subscore),
        updated_at: new Date(row.updated_at).getTime(),
      }))
      .sort(
        (a, b) =>
          b.score - a.score ||
          b.subscore - a.subscore ||
          a.updated_at - b.updated_at ||
          (a.user_id < b.user_id ? -1 : 1),
      );
  }

  const ranked = (rows: Row[]) => rows.map((row, i) => ({ user_id: row.user_id, rank: i + 1 }));
  const pick = (items: Answered[]) => items.map(({ user_id, rank }) => ({ user_id, rank }));
  const records = (query: string) =>
    call('GET', `/api/leaderboards/${boardId}/records?${query}`, reader.access_token).then((answer) => {
      expect(answer.status).toBe(200);
      return answer.body as { items: Answered[]; next_cursor: string | null };
    });

  async function expectExactStandings(): Promise<void> {
    const expected = ranked(await reference());
    const paged: Answered[] = [];
    for (let cursor: string | null = null; ; ) {
      const page = await records(`limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      paged.push(...page.items);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    expect(pick(paged)).toEqual(expected);
    const total = expected.length;
    for (const limit of [1, 4, 5]) {
      for (const target of [expected[0], expected[Math.floor(total / 2)], expected[total - 1]]) {
        const r = (target?.rank ?? 0) - 1;
        const start = Math.max(0, Math.min(r - Math.floor((limit - 1) / 2), total - limit));
        const around = await records(`limit=${limit}&around_user_id=${target?.user_id}`);
        expect(pick(around.items)).toEqual(expected.slice(start, start + limit));
      }
    }
    // A user without a record, and a target that names no user, are answered the top page.
    for (const target of [outsider.user.id, 'not-a-user']) {
      const top = await records(`limit=4&around_user_id=${target}`);
      expect(pick(top.items)).toEqual(expected.slice(0, 4));
      expect(top.next_cursor).not.toBeNull();
    }
    const some = [expected[2], expected[total - 2]].map((entry) => entry?.user_id);
    const byIds = await records(`user_ids=${some.join(',')},not-a-user`);
    expect(pick(byIds.items)).toEqual([expected[2], expected[total - 2]]);
    const one = expected[3] as { user_id: string; rank: number };
    const single = await call(
      'GET',
      `/api/leaderboards/${boardId}/records/${one.user_id}`,
      reader.access_token,
    );
    expect(single.body.rank).toBe(one.rank);
  }

  /** The KV keys of the board's current period's rank index. */
  async function indexKeys() {
    const [row] = await queryRows<{ ref: string; created_at: Date }>(
      app().db,
      'select ref, created_at from leaderboards where id = ?',
      [boardId],
    );
    const tag = `lb:{${row?.ref}:${new Date(row?.created_at as Date).getTime()}}`;
    return { set: `${tag}:set`, versions: `${tag}:versions`, ready: `${tag}:ready` };
  }

  const indexReady = async () => {
    const { ready } = await indexKeys();
    await vi.waitFor(async () => expect(await app().kv.get(ready)).not.toBeNull(), { timeout: 20_000 });
  };

  it('answers exact ranks from SQL before the rank index is built, and from the index once it is', async () => {
    await expectExactStandings();
    await indexReady();
    await expectExactStandings();
  });

  it('keeps ranks exact while submissions land on the index', async () => {
    await indexReady();
    for (const user of users.slice(0, 10)) {
      const answer = await call('POST', `/api/leaderboards/${boardId}/records`, user.access_token, {
        score: next(5),
        subscore: next(3),
      });
      const expected = ranked(await reference()).find((entry) => entry.user_id === user.user.id);
      expect(answer.body.rank).toBe(expected?.rank);
    }
    await expectExactStandings();
  });

  it('stays exact when the index is lost, answering from SQL until it is rebuilt', async () => {
    await indexReady();
    const keys = await indexKeys();
    await app().kv.del(keys.set, keys.versions, keys.ready);
    await expectExactStandings();
    await indexReady();
    expect(await app().kv.zcard(keys.set)).toBe((await reference()).length);
    await expectExactStandings();
  });

  it('leaves the index unready when the KV loses its keys while it is being rebuilt', async () => {
    const kv = new MemoryKv();
    // The KV is flushed as the first batch arrives: that batch, and the lease, are gone.
    let flushed = false;
    const flushing = new Proxy(kv, {
      get(target, name, receiver) {
        if (name !== 'zreplaceVersionedMany') return Reflect.get(target, name, receiver);
        return async (...args: Parameters<MemoryKv['zreplaceVersionedMany']>) => {
          if (!flushed) {
            flushed = true;
            const keys = await indexKeys();
            await target.del(
              keys.set,
              keys.versions,
              keys.ready,
              `${keys.ready.slice(0, -':ready'.length)}:lease`,
            );
          }
          return target.zreplaceVersionedMany(...args);
        };
      },
    });
    const [row] = await queryRows<{ ref: string; created_at: Date }>(
      app().db,
      'select ref, created_at from leaderboards where id = ?',
      [boardId],
    );
    const index = new RankIndex(flushing, app().log, () => app().db.data);
    const period = { ref: row?.ref as string, periodStart: new Date(row?.created_at as Date) };
    await index.rebuild(period, 0);
    expect(flushed).toBe(true);
    expect(await kv.get((await indexKeys()).ready)).toBeNull();
    await kv.close();
  });

  it("answers a submission's exact rank from SQL when the rank index cannot take its change", async () => {
    await indexReady();
    // The best-ranked user falls to the bottom, and the index refuses the change (its versions
    // key made another type): it still holds their old member above everyone, so a rank it
    // answered would be one too far down.
    const [best] = ranked(await reference());
    const falling = users.find((user) => user.user.id === best?.user_id) as TokenResponse;
    const keys = await indexKeys();
    await app().kv.del(keys.versions);
    await app().kv.set(keys.versions, 'not a hash of versions');
    const answer = await call('POST', `/api/leaderboards/${boardId}/records`, falling.access_token, {
      score: -1,
      subscore: 0,
    });
    expect(answer.status).toBe(200);
    const expected = ranked(await reference());
    expect(answer.body.rank).toBe(expected.length);
    expect(expected.at(-1)?.user_id).toBe(falling.user.id);
    await expectExactStandings();
  });

  it("closes the ranks up when an account is deleted, its records gone from every period's index", async () => {
    await indexReady();
    const stored = await reference();
    const leaving = users.find(
      (user) => user !== reader && stored.some((row) => row.user_id === user.user.id),
    ) as TokenResponse;
    const before = stored.length;
    const deleted = await call('DELETE', '/api/users/me', leaving.access_token, { password: PASSWORD });
    expect(deleted.status).toBe(204);
    expect((await reference()).length).toBe(before - 1);
    await expectExactStandings();
    await indexReady();
    await expectExactStandings();
  });
});
