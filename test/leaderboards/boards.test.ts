import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { silentCommand } from '../gameservers/gameservers.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createBoard, leaderboardCalls, serverToken } from './leaderboards.js';

/** Boards and their records over REST (docs/leaderboards.md, "Boards" and "Records"). */
describe('leaderboards', () => {
  const servers = silentCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: servers.command, LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: 1000 });
  const call = leaderboardCalls(app);
  let admin: TokenResponse;
  let alice: TokenResponse;
  let bob: TokenResponse;
  let boards = 0;
  const nextId = () => `board-${process.pid}-${++boards}`;
  beforeAll(async () => {
    admin = await registerWithRole(app(), 'admin');
    alice = await registerUser(app());
    bob = await registerUser(app());
  });

  const board = (settings: Record<string, unknown> = {}) =>
    createBoard(app(), admin.access_token, { id: nextId(), ...settings });
  const submit = (id: string, user: TokenResponse, body: object) =>
    call('POST', `/api/leaderboards/${id}/records`, user.access_token, body);
  const recordRows = (id: string) =>
    queryRows<{ user_id: string; score: string }>(
      app().db,
      'select r.user_id, r.score from leaderboard_records r join leaderboards b on b.ref = r.standings_ref where b.id = ?',
      [id],
    );

  describe('administration', () => {
    it('creates a board with the contract defaults and answers it with its current period', async () => {
      const id = nextId();
      const created = await call('POST', '/api/admin/leaderboards', admin.access_token, { id });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id,
        sort: 'desc',
        operator: 'best',
        reset_schedule: null,
        authoritative: false,
        metadata: {},
        created_at: expect.stringMatching(/Z$/),
        period_started_at: created.body.created_at,
        next_reset_at: null,
      });
      expect((await call('GET', `/api/leaderboards/${id}`, alice.access_token)).body).toEqual(created.body);
    });

    it('answers a scheduled board with its next reset', async () => {
      const id = await board({ reset_schedule: '0 0 * * *' });
      const { body } = await call('GET', `/api/leaderboards/${id}`, alice.access_token);
      const next = new Date(body.next_reset_at);
      expect(next.getUTCHours()).toBe(0);
      expect(next.getUTCMinutes()).toBe(0);
      expect(next.getTime() - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    });

    it('refuses an id in use with 409 CONFLICT and changes nothing', async () => {
      const id = await board({ sort: 'asc' });
      const again = await call('POST', '/api/admin/leaderboards', admin.access_token, { id, sort: 'desc' });
      expect(again.status).toBe(409);
      expect(again.body.code).toBe('CONFLICT');
      expect((await call('GET', `/api/leaderboards/${id}`, alice.access_token)).body.sort).toBe('asc');
    });

    it.each([
      ['a bad id', { id: 'Has Caps' }, 'id'],
      ['a bad sort', { sort: 'up' }, 'sort'],
      ['a schedule with names', { reset_schedule: '0 0 * * MON' }, 'reset_schedule'],
      ['a schedule that never fires', { reset_schedule: '0 0 31 2 *' }, 'reset_schedule'],
      ['an unknown key', { ranked: true }, ''],
      ['metadata that is not an object', { metadata: [1] }, 'metadata'],
    ])('refuses %s with 422 naming the field, before the role check', async (_what, body, field) => {
      const id = nextId();
      for (const token of [admin.access_token, alice.access_token]) {
        const refused = await call('POST', '/api/admin/leaderboards', token, { id, ...body });
        expect(refused.status).toBe(422);
        expect(refused.body.code).toBe('VALIDATION_FAILED');
        if (field) expect(JSON.stringify(refused.body.errors)).toContain(field);
      }
      expect((await call('GET', `/api/leaderboards/${id}`, alice.access_token)).status).toBe(404);
    });

    it('lets only admins create and delete boards (403 FORBIDDEN, nothing written)', async () => {
      const moderator = await registerWithRole(app(), 'moderator');
      const id = nextId();
      for (const user of [alice, moderator]) {
        const refused = await call('POST', '/api/admin/leaderboards', user.access_token, { id });
        expect(refused.status).toBe(403);
        expect(refused.body.code).toBe('FORBIDDEN');
      }
      expect((await call('GET', `/api/leaderboards/${id}`, alice.access_token)).status).toBe(404);
      const existing = await board();
      expect((await call('DELETE', `/api/admin/leaderboards/${existing}`, alice.access_token)).status).toBe(
        403,
      );
      expect((await call('GET', `/api/leaderboards/${existing}`, alice.access_token)).status).toBe(200);
    });

    it('deletes a board with its records, audits both actions, and a new board of that id starts empty', async () => {
      const id = await board();
      expect((await submit(id, alice, { score: 10 })).status).toBe(200);
      expect(await recordRows(id)).toHaveLength(1);
      expect((await call('DELETE', `/api/admin/leaderboards/${id}`, admin.access_token)).status).toBe(204);
      expect((await call('GET', `/api/leaderboards/${id}`, alice.access_token)).status).toBe(404);
      expect((await call('DELETE', `/api/admin/leaderboards/${id}`, admin.access_token)).status).toBe(404);
      const audit = await call('GET', `/api/admin/audit?target=${id}`, admin.access_token);
      expect(audit.body.items.map((entry: { action: string }) => entry.action).sort()).toEqual([
        'leaderboards.create',
        'leaderboards.delete',
      ]);
      await board({ id });
      const records = await call('GET', `/api/leaderboards/${id}/records`, alice.access_token);
      expect(records.body.items).toEqual([]);
    });

    it("lets an admin delete a cheater's record with a reason, audited, and the others move up", async () => {
      const id = await board();
      await submit(id, alice, { score: 99 });
      await submit(id, bob, { score: 5 });
      const url = `/api/admin/leaderboards/${id}/records/${alice.user.id}`;
      expect((await call('DELETE', url, bob.access_token, { reason: 'cheating' })).status).toBe(403);
      expect((await call('DELETE', url, admin.access_token, {})).status).toBe(422);
      expect(await recordRows(id)).toHaveLength(2);
      expect((await call('DELETE', url, admin.access_token, { reason: 'speed hack' })).status).toBe(204);
      expect(await recordRows(id)).toEqual([{ user_id: bob.user.id, score: '5' }]);
      const bobs = await call('GET', `/api/leaderboards/${id}/records/${bob.user.id}`, alice.access_token);
      expect(bobs.body.rank).toBe(1);
      const audit = await call(
        'GET',
        `/api/admin/audit?action=leaderboards.records.delete&target=${id}`,
        admin.access_token,
      );
      expect(audit.body.items).toEqual([
        expect.objectContaining({
          before: expect.objectContaining({ user_id: alice.user.id, score: 99, num_submissions: 1 }),
          after: { reason: 'speed hack' },
        }),
      ]);
    });

    it('lists boards by id in pages, and refuses a foreign cursor', async () => {
      const first = await call('GET', '/api/leaderboards?limit=2', alice.access_token);
      expect(first.body.items).toHaveLength(2);
      const second = await call(
        'GET',
        `/api/leaderboards?limit=2&cursor=${first.body.next_cursor}`,
        alice.access_token,
      );
      const ids = [...first.body.items, ...second.body.items].map((item: { id: string }) => item.id);
      expect(ids).toEqual([...ids].sort());
      expect(new Set(ids).size).toBe(ids.length);
      const foreign = await call('GET', '/api/leaderboards?cursor=Zm9vIGJhcg', alice.access_token);
      expect(foreign.status).toBe(422);
    });
  });

  describe('submissions', () => {
    it('keeps the best score of a best board and counts every submission', async () => {
      const id = await board();
      const first = await submit(id, alice, { score: 10, metadata: { run: 1 } });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({
        leaderboard_id: id,
        user_id: alice.user.id,
        score: 10,
        subscore: 0,
      });
      expect(first.body).toMatchObject({ num_submissions: 1, rank: 1, username: alice.user.username });
      const worse = await submit(id, alice, { score: 5, metadata: { run: 2 } });
      expect(worse.body).toMatchObject({ score: 10, num_submissions: 2, metadata: { run: 1 } });
      expect(worse.body.updated_at).toBe(first.body.updated_at);
      const tie = await submit(id, alice, { score: 10, subscore: 0 });
      expect(tie.body.updated_at).toBe(first.body.updated_at);
      const better = await submit(id, alice, { score: 10, subscore: 3 });
      expect(better.body).toMatchObject({ score: 10, subscore: 3, num_submissions: 4, metadata: { run: 1 } });
    });

    it('takes the lower score as better on an asc board', async () => {
      const id = await board({ sort: 'asc' });
      await submit(id, alice, { score: 30 });
      expect((await submit(id, alice, { score: 20 })).body.score).toBe(20);
      expect((await submit(id, alice, { score: 25 })).body.score).toBe(20);
      await submit(id, bob, { score: 10 });
      const records = await call('GET', `/api/leaderboards/${id}/records`, alice.access_token);
      expect(records.body.items.map((r: { score: number; rank: number }) => [r.score, r.rank])).toEqual([
        [10, 1],
        [20, 2],
      ]);
    });

    it('replaces on a set board and adds on an incr board, negative too', async () => {
      const set = await board({ operator: 'set' });
      await submit(set, alice, { score: 50 });
      expect((await submit(set, alice, { score: 7, subscore: -2 })).body).toMatchObject({
        score: 7,
        subscore: -2,
      });
      const incr = await board({ operator: 'incr' });
      await submit(incr, alice, { score: 5, subscore: 1 });
      expect((await submit(incr, alice, { score: -8, subscore: 1 })).body).toMatchObject({
        score: -3,
        subscore: 2,
        num_submissions: 2,
      });
    });

    it('applies concurrent incr submissions of one user one after another', async () => {
      const id = await board({ operator: 'incr' });
      const answers = await Promise.all(Array.from({ length: 10 }, () => submit(id, alice, { score: 1 })));
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
      const mine = await call('GET', `/api/leaderboards/${id}/records/${alice.user.id}`, alice.access_token);
      expect(mine.body).toMatchObject({ score: 10, num_submissions: 10 });
    });

    it('refuses an incr that leaves ±(2^53-1) with 422 SCORE_OUT_OF_RANGE and writes nothing', async () => {
      const id = await board({ operator: 'incr' });
      await submit(id, alice, { score: Number.MAX_SAFE_INTEGER - 1 });
      const refused = await submit(id, alice, { score: 2 });
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('SCORE_OUT_OF_RANGE');
      const mine = await call('GET', `/api/leaderboards/${id}/records/${alice.user.id}`, alice.access_token);
      expect(mine.body).toMatchObject({ score: Number.MAX_SAFE_INTEGER - 1, num_submissions: 1 });
    });

    it.each([
      ['a fraction', { score: 1.5 }, 'score'],
      ['a string', { score: '10' }, 'score'],
      ['null', { score: null }, 'score'],
      ['a score beyond 2^53-1', { score: 2 ** 53 }, 'score'],
      ['a subscore beyond 2^53-1', { score: 1, subscore: -(2 ** 53) }, 'subscore'],
      ['metadata over 2048 bytes', { score: 1, metadata: { text: 'x'.repeat(2048) } }, 'metadata'],
      ['an unknown key', { score: 1, rank: 1 }, ''],
    ])('refuses %s with 422 naming the field and writes nothing', async (_what, body, field) => {
      const id = await board();
      const refused = await submit(id, alice, body);
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('VALIDATION_FAILED');
      if (field) expect(JSON.stringify(refused.body.errors)).toContain(field);
      expect(await recordRows(id)).toEqual([]);
    });

    it('checks the body before the board: 422 for a bad body on a missing board, then 404', async () => {
      expect((await submit('no-such-board', alice, { score: 'x' })).status).toBe(422);
      const missing = await submit('no-such-board', alice, { score: 1 });
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('NOT_FOUND');
    });

    it("refuses a client's writes to an authoritative board with 403, and lets a game server write them", async () => {
      const id = await board({ authoritative: true });
      const refused = await submit(id, alice, { score: 3 });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('FORBIDDEN');
      expect((await call('DELETE', `/api/leaderboards/${id}/records/me`, alice.access_token)).status).toBe(
        403,
      );
      expect(await recordRows(id)).toEqual([]);
      const token = await serverToken(app, servers, bob);
      const written = await call('POST', `/internal/leaderboards/${id}/records`, token, {
        user_id: alice.user.id,
        score: 3,
      });
      expect(written.status).toBe(200);
      expect(written.body).toMatchObject({ user_id: alice.user.id, score: 3, rank: 1 });
      const unknown = await call('POST', `/internal/leaderboards/${id}/records`, token, {
        user_id: '01a226c3-ae83-71ef-8249-ac6535f2bf5a',
        score: 3,
      });
      expect(unknown.status).toBe(404);
      const asUser = await call('POST', `/internal/leaderboards/${id}/records`, alice.access_token, {
        user_id: alice.user.id,
        score: 9,
      });
      expect(asUser.status).toBe(401);
      expect(
        (await call('DELETE', `/internal/leaderboards/${id}/records/${alice.user.id}`, token)).status,
      ).toBe(204);
      expect(await recordRows(id)).toEqual([]);
    });

    it('deletes the caller’s record, also when there is none, and the others move up', async () => {
      const id = await board();
      await submit(id, alice, { score: 10 });
      await submit(id, bob, { score: 5 });
      expect((await call('DELETE', `/api/leaderboards/${id}/records/me`, alice.access_token)).status).toBe(
        204,
      );
      expect((await call('DELETE', `/api/leaderboards/${id}/records/me`, alice.access_token)).status).toBe(
        204,
      );
      const bobs = await call('GET', `/api/leaderboards/${id}/records/${bob.user.id}`, alice.access_token);
      expect(bobs.body.rank).toBe(1);
      expect(
        (await call('GET', `/api/leaderboards/${id}/records/${alice.user.id}`, bob.access_token)).status,
      ).toBe(404);
    });
  });

  describe('reads', () => {
    const records = (id: string, query: string, user: TokenResponse = alice) =>
      call('GET', `/api/leaderboards/${id}/records?${query}`, user.access_token);

    it("shows a record's times as Date.toISOString writes the stored ones, in every answer", async () => {
      const id = await board();
      const submitted = await submit(id, alice, { score: 3 });
      // A time stored with microseconds (written by hand) shows its milliseconds, as a Date would.
      await queryRows(
        app().db,
        `update leaderboard_records r set created_at = '2026-01-02T03:04:05.678999Z'
         from leaderboards b where b.ref = r.standings_ref and b.id = ? and r.user_id = ?`,
        [id, alice.user.id],
      );
      const [stored] = await queryRows<{ created_at: string; updated_at: string }>(
        app().db,
        `select r.created_at, r.updated_at from leaderboard_records r join leaderboards b on b.ref = r.standings_ref
         where b.id = ? and r.user_id = ?`,
        [id, alice.user.id],
      );
      // What node-pg's Date of each column writes back (the service's answers before they took text).
      const asDate = pg.types.getTypeParser(1184) as (text: string) => Date;
      const times = {
        created_at: asDate(stored?.created_at as string).toISOString(),
        updated_at: asDate(stored?.updated_at as string).toISOString(),
      };
      expect(times.created_at).toBe('2026-01-02T03:04:05.678Z');
      expect(submitted.body.updated_at).toBe(times.updated_at);
      for (const query of ['', 'around=me', `user_ids=${alice.user.id}`, 'friends=true'])
        expect((await records(id, query)).body.items[0]).toMatchObject(times);
      expect(
        (await call('GET', `/api/leaderboards/${id}/records/${alice.user.id}`, alice.access_token)).body,
      ).toMatchObject(times);
      expect((await submit(id, alice, { score: 1 })).body).toMatchObject(times);
    });

    it("pages the caller's and their accepted friends' records with their ranks among all", async () => {
      const [carol, dave, erin] = [
        await registerUser(app()),
        await registerUser(app()),
        await registerUser(app()),
      ];
      const friends = async (a: TokenResponse, b: TokenResponse) => {
        expect(
          (await call('POST', '/api/friends/requests', a.access_token, { user_id: b.user.id })).status,
        ).toBe(201);
        expect(
          (await call('POST', `/api/friends/requests/${a.user.id}/accept`, b.access_token)).status,
        ).toBeLessThan(300);
      };
      await friends(carol, dave);
      await friends(erin, carol);
      // A pending request does not count.
      await call('POST', '/api/friends/requests', carol.access_token, { user_id: bob.user.id });
      const id = await board();
      for (const [user, score] of [
        [alice, 50],
        [dave, 40],
        [bob, 30],
        [carol, 20],
        [erin, 10],
      ] as const)
        await submit(id, user, { score });
      const first = await records(id, 'friends=true&limit=2', carol);
      expect(first.body.items.map((r: { user_id: string; rank: number }) => [r.user_id, r.rank])).toEqual([
        [dave.user.id, 2],
        [carol.user.id, 4],
      ]);
      const rest = await records(id, `friends=true&limit=2&cursor=${first.body.next_cursor}`, carol);
      expect(rest.body.items.map((r: { user_id: string; rank: number }) => [r.user_id, r.rank])).toEqual([
        [erin.user.id, 5],
      ]);
      expect(rest.body.next_cursor).toBeNull();
    });

    it('centres around=me on the caller, and answers the top page to a user without a record', async () => {
      const id = await board();
      const users = [alice, bob, ...(await Promise.all([1, 2, 3].map(() => registerUser(app()))))];
      for (const [i, user] of users.entries()) await submit(id, user, { score: 100 - i });
      const around = await records(id, 'around=me&limit=3', users[3]);
      expect(around.body.items.map((r: { rank: number }) => r.rank)).toEqual([3, 4, 5]);
      const outsider = await registerUser(app());
      const top = await records(id, 'around=me&limit=2', outsider);
      expect(top.body.items.map((r: { rank: number }) => r.rank)).toEqual([1, 2]);
      expect(top.body.next_cursor).not.toBeNull();
    });

    it.each([
      ['two selectors', 'around=me&friends=true'],
      ['a cursor with around', 'around=me&cursor=abc'],
      ['a cursor with user_ids', 'user_ids=x&cursor=abc'],
      ['a foreign cursor', 'cursor=bm90IGEgY3Vyc29y'],
      ['around other than me', 'around=you'],
      ['friends other than true', 'friends=yes'],
      ['an unknown period', 'period=next'],
      ['more than 100 user ids', `user_ids=${Array.from({ length: 101 }, (_, i) => `u${i}`).join(',')}`],
      ['an empty user id', 'user_ids=a,,b'],
      ['a limit over 100', 'limit=101'],
    ])('refuses %s with 422', async (_what, query) => {
      const id = await board();
      const refused = await records(id, query);
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('VALIDATION_FAILED');
    });

    it('answers 404 for a user without a record, and for a board that does not exist', async () => {
      const id = await board();
      expect(
        (await call('GET', `/api/leaderboards/${id}/records/${bob.user.id}`, alice.access_token)).status,
      ).toBe(404);
      expect(
        (await call('GET', `/api/leaderboards/${id}/records/not-an-id`, alice.access_token)).status,
      ).toBe(404);
      expect((await records('no-such-board', 'limit=5')).status).toBe(404);
    });
  });
});
