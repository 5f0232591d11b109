import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { LeaderboardsApi } from '../../src/modules/leaderboards/index.js';
import { silentCommand } from '../gameservers/gameservers.js';
import { PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { notTimeSafeToReuse } from '../helpers/embedded-reuse.js';
import { leaderboardCalls, serverToken } from './leaderboards.js';

const RECORDER = fileURLToPath(new URL('./fixtures/events-recorder.mjs', import.meta.url));
interface EndedEvent {
  type: string;
  data: {
    tournament_id: string;
    size: number;
    standings: { user_id: string; rank: number; score: number }[];
  };
}
const endedOf = (id: string) =>
  ((globalThis as unknown as { leaderboardEvents?: EndedEvent[] }).leaderboardEvents ?? []).filter(
    (event) => event.type === 'tournament.ended' && event.data.tournament_id === id,
  );

const HOUR = 3600_000;

/**
 * Tournaments (docs/leaderboards.md, "Tournaments") on a fake clock: Date stands still unless a
 * test moves it, so "1 ms before end_at" is exactly that; timers and the database run for real.
 */
describe('tournaments', () => {
  const servers = silentCommand();
  const app = useTestApp({
    EXTENSIONS: RECORDER,
    GAMESERVER_COMMAND: servers.command,
    LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: 1000,
  });
  const call = leaderboardCalls(app);
  const scheduler = () => (app().modules as unknown as { leaderboards: LeaderboardsApi }).leaderboards;
  let admin: TokenResponse;
  let alice: TokenResponse;
  let bob: TokenResponse;
  let made = 0;
  const t0 = Date.parse('2028-02-28T12:00:00.000Z');
  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: t0 });
    admin = await registerWithRole(app(), 'admin');
    [alice, bob] = [await registerUser(app()), await registerUser(app())];
  });
  afterAll(async () => {
    vi.useRealTimers();
    // The embedded database kept time by the faked Date: it is closed, not handed to the next file.
    notTimeSafeToReuse();
  });

  const iso = (ms: number) => new Date(ms).toISOString();
  /** A tournament from `startIn` to `endIn` ms from now. */
  const tournament = async (settings: Record<string, unknown> = {}, startIn = -HOUR, endIn = HOUR) => {
    const id = `cup-${process.pid}-${++made}`;
    const created = await call('POST', '/api/admin/tournaments', admin.access_token, {
      id,
      title: '  Leap day cup  ',
      start_at: iso(Date.now() + startIn),
      end_at: iso(Date.now() + endIn),
      ...settings,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return id;
  };
  const join = (id: string, user: TokenResponse) =>
    call('POST', `/api/tournaments/${id}/join`, user.access_token);
  const submit = (id: string, user: TokenResponse, body: object) =>
    call('POST', `/api/tournaments/${id}/records`, user.access_token, body);
  const records = (id: string) =>
    queryRows<{ user_id: string }>(
      app().db,
      'select r.user_id from leaderboard_records r join tournaments t on t.ref = r.standings_ref where t.id = ?',
      [id],
    );

  describe('administration', () => {
    it('creates a tournament with the contract defaults, its title trimmed, times in UTC', async () => {
      const created = await call('POST', '/api/admin/tournaments', admin.access_token, {
        id: `defaults-${process.pid}`,
        title: ' Spring open ',
        start_at: '2028-03-01T10:00:00+02:00',
        end_at: '2028-03-02T10:00:00+02:00',
      });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: `defaults-${process.pid}`,
        title: 'Spring open',
        description: '',
        sort: 'desc',
        operator: 'best',
        start_at: '2028-03-01T08:00:00.000Z',
        end_at: '2028-03-02T08:00:00.000Z',
        max_size: null,
        join_required: true,
        authoritative: false,
        metadata: {},
        created_at: iso(t0),
        size: 0,
        state: 'upcoming',
      });
      const again = await call('POST', '/api/admin/tournaments', admin.access_token, {
        id: `defaults-${process.pid}`,
        title: 'Other',
        start_at: '2028-03-01T10:00:00Z',
        end_at: '2028-03-02T10:00:00Z',
      });
      expect(again.status).toBe(409);
    });

    it.each([
      [
        'end_at before start_at',
        { start_at: '2028-03-02T00:00:00Z', end_at: '2028-03-01T00:00:00Z' },
        'end_at',
      ],
      ['end_at in the past', { start_at: '2028-01-01T00:00:00Z', end_at: '2028-02-01T00:00:00Z' }, 'end_at'],
      [
        'end_at over 10 years ahead',
        { start_at: '2028-03-01T00:00:00Z', end_at: '2038-03-01T00:00:00Z' },
        'end_at',
      ],
      [
        'a time without an offset',
        { start_at: '2028-03-01T00:00:00', end_at: '2028-03-02T00:00:00Z' },
        'start_at',
      ],
      [
        'a max_size of 0',
        { start_at: '2028-03-01T00:00:00Z', end_at: '2028-03-02T00:00:00Z', max_size: 0 },
        'max_size',
      ],
      [
        'an empty title',
        { title: '   ', start_at: '2028-03-01T00:00:00Z', end_at: '2028-03-02T00:00:00Z' },
        'title',
      ],
    ])('refuses %s with 422 naming the field, before the role check', async (_what, body, field) => {
      for (const user of [admin, alice]) {
        const refused = await call('POST', '/api/admin/tournaments', user.access_token, {
          id: `refused-${process.pid}`,
          title: 'Cup',
          ...body,
        });
        expect(refused.status).toBe(422);
        expect(JSON.stringify(refused.body.errors)).toContain(field);
      }
    });

    it('lets only admins create and delete, and deletes participants and records, audited', async () => {
      const refused = await call('POST', '/api/admin/tournaments', alice.access_token, {
        id: `mine-${process.pid}`,
        title: 'Mine',
        start_at: iso(t0),
        end_at: iso(t0 + HOUR),
      });
      expect(refused.status).toBe(403);
      const id = await tournament({ join_required: false });
      await submit(id, alice, { score: 3 });
      expect(await records(id)).toHaveLength(1);
      expect((await call('DELETE', `/api/admin/tournaments/${id}`, alice.access_token)).status).toBe(403);
      expect((await call('DELETE', `/api/admin/tournaments/${id}`, admin.access_token)).status).toBe(204);
      expect((await call('GET', `/api/tournaments/${id}`, alice.access_token)).status).toBe(404);
      expect(await records(id)).toEqual([]);
      const audit = await call('GET', `/api/admin/audit?target=${id}`, admin.access_token);
      expect(audit.body.items.map((entry: { action: string }) => entry.action).sort()).toEqual([
        'tournaments.create',
        'tournaments.delete',
      ]);
    });
  });

  describe('joining', () => {
    it('lets users join while upcoming or active, answers a second join with the same joined_at, and refuses after the end', async () => {
      const upcoming = await tournament({}, HOUR, 2 * HOUR);
      const first = await join(upcoming, alice);
      expect(first.status).toBe(200);
      expect(first.body).toEqual({
        tournament_id: upcoming,
        user_id: alice.user.id,
        joined_at: iso(Date.now()),
      });
      vi.setSystemTime(Date.now() + 1000);
      expect((await join(upcoming, alice)).body.joined_at).toBe(first.body.joined_at);
      expect((await call('GET', `/api/tournaments/${upcoming}`, bob.access_token)).body.size).toBe(1);
      const ending = await tournament({}, -HOUR, 1000);
      vi.setSystemTime(Date.now() + 1000);
      const closed = await join(ending, bob);
      expect(closed.status).toBe(409);
      expect(closed.body).toMatchObject({ code: 'TOURNAMENT_CLOSED', state: 'ended' });
    });

    it('never lets concurrent joins pass max_size, and answers TOURNAMENT_FULL with max_size', async () => {
      const id = await tournament({ max_size: 3 });
      const users = await Promise.all(Array.from({ length: 8 }, () => registerUser(app())));
      const answers = await Promise.all(users.map((user) => join(id, user)));
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(3);
      const refused = answers.filter((answer) => answer.status === 409);
      expect(refused).toHaveLength(5);
      expect(refused[0]?.body).toMatchObject({ code: 'TOURNAMENT_FULL', max_size: 3 });
      expect((await call('GET', `/api/tournaments/${id}`, alice.access_token)).body.size).toBe(3);
      const member = users[answers.findIndex((answer) => answer.status === 200)] as TokenResponse;
      expect((await join(id, member)).status).toBe(200);
    });
  });

  describe('submissions', () => {
    it('refuses a user who did not join with 403 NOT_JOINED and writes nothing', async () => {
      const id = await tournament();
      const refused = await submit(id, alice, { score: 5 });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('NOT_JOINED');
      expect(await records(id)).toEqual([]);
      await join(id, alice);
      expect((await submit(id, alice, { score: 5 })).body).toMatchObject({
        tournament_id: id,
        rank: 1,
        score: 5,
      });
    });

    it('joins on the first submission without join_required, and refuses it whole when the tournament is full', async () => {
      const id = await tournament({ join_required: false, max_size: 1 });
      expect((await submit(id, alice, { score: 1 })).status).toBe(200);
      expect((await call('GET', `/api/tournaments/${id}`, bob.access_token)).body.size).toBe(1);
      const full = await submit(id, bob, { score: 2 });
      expect(full.status).toBe(409);
      expect(full.body.code).toBe('TOURNAMENT_FULL');
      expect(await records(id)).toHaveLength(1);
    });

    it('accepts a submission 1 ms before end_at and refuses one at end_at with the state and times', async () => {
      const end = Date.now() + HOUR;
      const id = await tournament({ join_required: false }, -HOUR, HOUR);
      vi.setSystemTime(end - 1);
      expect((await submit(id, alice, { score: 1 })).status).toBe(200);
      vi.setSystemTime(end);
      const refused = await submit(id, bob, { score: 9 });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        code: 'TOURNAMENT_CLOSED',
        state: 'ended',
        end_at: iso(end),
        start_at: iso(end - 2 * HOUR),
      });
      expect(await records(id)).toHaveLength(1);
      const standings = await call('GET', `/api/tournaments/${id}/records`, bob.access_token);
      expect(standings.body.items.map((r: { user_id: string; rank: number }) => [r.user_id, r.rank])).toEqual(
        [[alice.user.id, 1]],
      );
    });

    it('refuses submissions before start_at', async () => {
      const id = await tournament({ join_required: false }, HOUR, 2 * HOUR);
      const refused = await submit(id, alice, { score: 1 });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: 'TOURNAMENT_CLOSED', state: 'upcoming' });
    });

    it('rolls back the join of a submission the operator refuses', async () => {
      const id = await tournament({ join_required: false, operator: 'incr' });
      await submit(id, alice, { score: Number.MAX_SAFE_INTEGER });
      const carol = await registerUser(app());
      expect((await submit(id, alice, { score: 1 })).body.code).toBe('SCORE_OUT_OF_RANGE');
      expect((await submit(id, carol, { score: 2 })).status).toBe(200);
      expect((await call('GET', `/api/tournaments/${id}`, alice.access_token)).body.size).toBe(2);
    });

    it("lets a game server write an authoritative tournament's records, with the same join rules, and refuses clients", async () => {
      const id = await tournament({ authoritative: true });
      expect((await submit(id, alice, { score: 1 })).status).toBe(403);
      const token = await serverToken(app, servers, bob);
      const notJoined = await call('POST', `/internal/tournaments/${id}/records`, token, {
        user_id: alice.user.id,
        score: 4,
      });
      expect(notJoined.body.code).toBe('NOT_JOINED');
      expect((await join(id, alice)).status).toBe(200);
      const written = await call('POST', `/internal/tournaments/${id}/records`, token, {
        user_id: alice.user.id,
        score: 4,
      });
      expect(written.body).toMatchObject({ tournament_id: id, user_id: alice.user.id, score: 4, rank: 1 });
    });
  });

  it('lists tournaments by state in the contract orders, the state evaluated at each page', async () => {
    const base = Date.now();
    const ids = {
      soon: await tournament({}, 2 * HOUR, 3 * HOUR),
      later: await tournament({}, 5 * HOUR, 6 * HOUR),
      running: await tournament({}, -HOUR, 4 * HOUR),
      short: await tournament({}, -HOUR, HOUR / 2),
    };
    vi.setSystemTime(base + HOUR);
    const list = async (query: string) => {
      const items: string[] = [];
      for (let cursor: string | null = null; ; ) {
        const page = await call(
          'GET',
          `/api/tournaments?${query}&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
          alice.access_token,
        );
        expect(page.status).toBe(200);
        items.push(...page.body.items.map((item: { id: string }) => item.id));
        cursor = page.body.next_cursor;
        if (!cursor) return items;
      }
    };
    const ours = (items: string[]) => items.filter((id) => Object.values(ids).includes(id));
    expect(ours(await list('state=upcoming'))).toEqual([ids.soon, ids.later]);
    expect(ours(await list('state=active'))).toEqual([ids.running]);
    expect(ours(await list('state=ended'))[0]).toBe(ids.short);
    const all = ours(await list(''));
    // running and short start together: by id then.
    expect(all).toEqual([ids.running, ids.short, ids.soon, ids.later]);
    expect((await call('GET', '/api/tournaments?state=over', alice.access_token)).status).toBe(422);
    expect((await call('GET', '/api/tournaments?cursor=WzEsMl0', alice.access_token)).status).toBe(422);
  });

  it('keeps final standings after the end, sends tournament.ended once with the top records, and drops a deleted account', async () => {
    const id = await tournament({ join_required: false, sort: 'asc' }, -HOUR, HOUR);
    const players = await Promise.all([1, 2, 3].map(() => registerUser(app())));
    for (const [i, player] of players.entries()) await submit(id, player, { score: 30 - i * 10 });
    vi.setSystemTime(Date.now() + 2 * HOUR);
    await scheduler().runScheduler();
    await scheduler().runScheduler();
    await vi.waitFor(() => expect(endedOf(id)).toHaveLength(1), { timeout: 10_000 });
    const [event] = endedOf(id);
    expect(event?.data.size).toBe(3);
    expect(event?.data.standings.map((r) => [r.user_id, r.rank, r.score])).toEqual([
      [players[2]?.user.id, 1, 10],
      [players[1]?.user.id, 2, 20],
      [players[0]?.user.id, 3, 30],
    ]);
    const leaving = players[1] as TokenResponse;
    expect((await call('DELETE', '/api/users/me', leaving.access_token, { password: PASSWORD })).status).toBe(
      204,
    );
    const after = await call('GET', `/api/tournaments/${id}/records`, alice.access_token);
    expect(after.body.items.map((r: { rank: number; score: number }) => [r.rank, r.score])).toEqual([
      [1, 10],
      [2, 30],
    ]);
    expect((await call('GET', `/api/tournaments/${id}`, alice.access_token)).body).toMatchObject({
      state: 'ended',
      size: 2,
    });
  });
});
