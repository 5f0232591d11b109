import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { LeaderboardsApi } from '../../src/modules/leaderboards/index.js';
import { LeaderboardScheduler } from '../../src/modules/leaderboards/scheduler.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { notTimeSafeToReuse } from '../helpers/embedded-reuse.js';
import { createBoard, leaderboardCalls } from './leaderboards.js';

const RECORDER = fileURLToPath(new URL('./fixtures/events-recorder.mjs', import.meta.url));
interface ResetEvent {
  id: string;
  data: { leaderboard_id: string; period_started_at: string; period_ended_at: string };
}
const events = () => (globalThis as unknown as { leaderboardEvents?: ResetEvent[] }).leaderboardEvents ?? [];
const eventsOf = (id: string) => events().filter((event) => event.data.leaderboard_id === id);

/**
 * Periods follow the one clock, and the scheduler announces each ended period holding records
 * once (docs/leaderboards.md, "Periods and resets"), on a fake clock: Date is faked and moved only
 * by the test, while timers and the database (whose own clock the outbox uses) run for real.
 */
describe('leaderboard periods and the reset scheduler', () => {
  // 2027-03-28 is the European DST change day: a `* * * * *` board resets on UTC minutes regardless.
  const start = Date.parse('2027-03-28T00:59:30.000Z');
  const app = useTestApp({ EXTENSIONS: RECORDER, LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: 1000 });
  const call = leaderboardCalls(app);
  const scheduler = () => (app().modules as unknown as { leaderboards: LeaderboardsApi }).leaderboards;
  let admin: TokenResponse;
  let alice: TokenResponse;
  let bob: TokenResponse;
  let boards = 0;
  beforeAll(async () => {
    // Date stands still unless the test moves it: a submission "1 ms before" is exactly that.
    vi.useFakeTimers({ toFake: ['Date'], now: start });
    admin = await registerWithRole(app(), 'admin');
    [alice, bob] = [await registerUser(app()), await registerUser(app())];
  });

  afterAll(async () => {
    vi.useRealTimers();
    // The embedded database kept time by the faked Date: it is closed, not handed to the next file.
    notTimeSafeToReuse();
  });

  /** A minutely board created now: its first period ends at the next UTC minute. */
  const minutely = () =>
    createBoard(app(), admin.access_token, {
      id: `minutely-${process.pid}-${++boards}`,
      reset_schedule: '* * * * *',
    });
  const submit = (id: string, user: TokenResponse, score: number) =>
    call('POST', `/api/leaderboards/${id}/records`, user.access_token, { score });
  const nextMinute = (from = Date.now()) => Math.ceil((from + 1) / 60_000) * 60_000;

  it('starts a new period at the exact reset time, keeps the previous one final, and announces it once', async () => {
    const id = await minutely();
    await submit(id, alice, 10);
    await submit(id, bob, 20);
    const reset = nextMinute();
    vi.setSystemTime(reset - 1);
    expect((await submit(id, alice, 30)).body.rank).toBe(1);
    vi.setSystemTime(reset);
    const board = await call('GET', `/api/leaderboards/${id}`, alice.access_token);
    expect(board.body.period_started_at).toBe(new Date(reset).toISOString());
    expect(board.body.next_reset_at).toBe(new Date(reset + 60_000).toISOString());
    const current = await call('GET', `/api/leaderboards/${id}/records`, alice.access_token);
    expect(current.body).toMatchObject({ items: [], period_ended_at: null });
    const previous = await call('GET', `/api/leaderboards/${id}/records?period=previous`, alice.access_token);
    expect(previous.body.items.map((r: { user_id: string; rank: number }) => [r.user_id, r.rank])).toEqual([
      [alice.user.id, 1],
      [bob.user.id, 2],
    ]);
    expect(previous.body.period_ended_at).toBe(new Date(reset).toISOString());
    expect((await submit(id, bob, 1)).body).toMatchObject({ num_submissions: 1, rank: 1 });

    await scheduler().runScheduler();
    await scheduler().runScheduler();
    await vi.waitFor(() => expect(eventsOf(id)).toHaveLength(1), { timeout: 10_000 });
    expect(eventsOf(id)[0]?.data).toEqual({
      leaderboard_id: id,
      period_started_at: previous.body.period_started_at,
      period_ended_at: new Date(reset).toISOString(),
    });
  });

  it('answers the previous period as an empty list before the first reset', async () => {
    const id = await minutely();
    const previous = await call('GET', `/api/leaderboards/${id}/records?period=previous`, alice.access_token);
    expect(previous.body).toEqual({
      items: [],
      next_cursor: null,
      period_started_at: null,
      period_ended_at: null,
    });
  });

  it('after a node was down over several resets, answers the current period at once and announces only the ended periods with records', async () => {
    const id = await minutely();
    await submit(id, alice, 1);
    const first = nextMinute();
    vi.setSystemTime(first + 10_000);
    await submit(id, bob, 2);
    // Three idle periods, then the current one.
    vi.setSystemTime(first + 4 * 60_000 + 5_000);
    const board = await call('GET', `/api/leaderboards/${id}`, alice.access_token);
    expect(board.body.period_started_at).toBe(new Date(first + 4 * 60_000).toISOString());
    await scheduler().runScheduler();
    await vi.waitFor(() => expect(eventsOf(id)).toHaveLength(2), { timeout: 10_000 });
    // Recorded in period order in one transaction; the outbox delivers events in no set order.
    expect(
      eventsOf(id)
        .map((event) => event.data.period_ended_at)
        .sort(),
    ).toEqual([new Date(first).toISOString(), new Date(first + 60_000).toISOString()]);
  });

  it('announces a period once when two nodes race for it', async () => {
    const id = await minutely();
    await submit(id, alice, 5);
    vi.setSystemTime(nextMinute() + 1);
    const recorded: unknown[] = [];
    const node = () =>
      new LeaderboardScheduler({
        data: () => app().db.data,
        outbox: { record: async (_tx, _type, data) => void recorded.push(data) },
        index: { drop: async () => {} },
        log: app().log,
        clock: () => new Date(),
        intervalMs: 60_000,
        restMs: 60_000,
        periodsKept: 1,
      });
    await Promise.all([node().runOnce(), node().runOnce(), scheduler().runScheduler()]);
    const announced = recorded.filter((data) => (data as { leaderboard_id: string }).leaderboard_id === id);
    const [row] = await queryRows<{ ended: Date | null }>(
      app().db,
      `select p.ended_event_at as ended from leaderboard_periods p join leaderboards b on b.ref = p.standings_ref
       where b.id = ?`,
      [id],
    );
    expect(row?.ended).not.toBeNull();
    // The app's own scheduler (or its timer) may have won it instead, but only one did.
    await vi.waitFor(() => expect(announced.length + eventsOf(id).length).toBe(1), { timeout: 10_000 });
  });

  /** A scheduler node with its own bus stub, counting its passes by its reads of `data`. */
  const restingNode = () => {
    let reads = 0;
    const told: unknown[] = [];
    let hear: (event: { t: string; d: unknown }) => void = () => {};
    const node = new LeaderboardScheduler({
      data: () => {
        reads++;
        return app().db.data;
      },
      outbox: { record: async () => undefined },
      index: { drop: async () => {} },
      log: app().log,
      // Before every end in the database: nothing has ended, and the next end is years away.
      clock: () => new Date(0),
      intervalMs: 500,
      // Never again by its own timer within the test: only what it is told wakes it.
      restMs: 3_600_000,
      bus: {
        publish: async (_topic, event) => void told.push(event.d),
        subscribe: async (_topic, handler) => {
          hear = handler as typeof hear;
          return async () => {};
        },
      },
      periodsKept: 1,
    });
    return { node, reads: () => reads, told, hear: (d: unknown) => hear({ t: 'leaderboards.end', d }) };
  };

  it('sleeps until an end another node announces, when that end comes before the one it knew', async () => {
    const { node, reads, hear } = restingNode();
    node.start();
    try {
      // Its first pass read the next end (years ahead of its clock) and sleeps for its restMs.
      await vi.waitFor(() => expect(reads()).toBe(1), { timeout: 10_000, interval: 10 });
      hear(new Date(20).toISOString());
      await vi.waitFor(() => expect(reads()).toBe(2), { timeout: 10_000, interval: 10 });
    } finally {
      await node.stop();
    }
  });

  it("tells the other nodes of a board's period end once, however many submissions note it", async () => {
    const { node, told } = restingNode();
    const ends = new Date(nextMinute());
    node.noted('board-ref', ends);
    node.noted('board-ref', ends);
    node.noted('other-ref', ends);
    node.noted('board-ref', new Date(ends.getTime() + 60_000));
    expect(told).toEqual([
      ends.toISOString(),
      ends.toISOString(),
      new Date(ends.getTime() + 60_000).toISOString(),
    ]);
  });

  it('removes periods older than those kept, with their records', async () => {
    const id = await minutely();
    await submit(id, alice, 5);
    vi.setSystemTime(nextMinute() + 1);
    await submit(id, alice, 6);
    vi.setSystemTime(nextMinute() + 1);
    await submit(id, alice, 7);
    vi.setSystemTime(nextMinute() + 1);
    await scheduler().runScheduler();
    const periods = () =>
      queryRows<{ n: number }>(
        app().db,
        `select count(distinct r.period_start)::int as n from leaderboard_records r
         join leaderboards b on b.ref = r.standings_ref where b.id = ?`,
        [id],
      );
    // LEADERBOARD_PERIODS_KEPT is 1: the previous period (score 7) stays, the two before it go.
    // The app's own pass may hold the board when this one runs: the board is then its to prune.
    await vi.waitFor(async () => expect((await periods())[0]?.n).toBe(1), { timeout: 10_000 });
    const previous = await call('GET', `/api/leaderboards/${id}/records?period=previous`, alice.access_token);
    expect(previous.body.items.map((r: { score: number }) => r.score)).toEqual([7]);
    await vi.waitFor(() => expect(eventsOf(id)).toHaveLength(3), { timeout: 10_000 });
  });

  it('sends no event for a board without records, nor for a board without schedule', async () => {
    const idle = await minutely();
    const forever = await createBoard(app(), admin.access_token, { id: `forever-${process.pid}` });
    await submit(forever, alice, 1);
    vi.setSystemTime(nextMinute() + 1);
    await scheduler().runScheduler();
    expect(eventsOf(idle)).toEqual([]);
    expect(eventsOf(forever)).toEqual([]);
    const board = await call('GET', `/api/leaderboards/${forever}`, alice.access_token);
    expect(board.body.next_reset_at).toBeNull();
  });
});
