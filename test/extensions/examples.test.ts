import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { gameServerCalls, launchesOf, silentCommand } from '../gameservers/gameservers.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets, request, type TestSocket } from '../helpers/ws-client.js';

// Loaded as an operator loads them: by path, through EXTENSIONS.
const STARTER = fileURLToPath(new URL('../../examples/extensions/starter.ts', import.meta.url));
const HELLO = fileURLToPath(new URL('../../examples/extensions/hello.mjs', import.meta.url));

const DAILY_COINS = 100;
const WELCOME_COINS = 50;
const MATCH_PRIZE = 250;
/** The deadline of every wait for an event handler: generous, the outbox polls every 250 ms. */
const EVENT_WAIT = { timeout: 20_000, interval: 100 };

const utcDay = (offsetDays: number) =>
  new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

/** examples/extensions end to end, over REST and the socket (docs/extensions.md walks through them). */
describe('the example extensions', () => {
  const servers = silentCommand();
  const app = useTestApp({ EXTENSIONS: `${STARTER},${HELLO}`, GAMESERVER_COMMAND: servers.command });
  const sockets = openedSockets(() => app().wsUrl);
  afterAll(() => sockets.closeAll());

  const post = (url: string, token: string | undefined, payload?: unknown) =>
    app().http.inject({
      method: 'POST',
      url,
      headers: token ? bearer(token) : {},
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
  const get = (url: string, token: string) =>
    app().http.inject({ method: 'GET', url, headers: bearer(token) });
  const balanceOf = async (user: TokenResponse) =>
    (await get('/api/economy/wallet', user.access_token)).json().balance as number;
  const grantsOf = async (user: TokenResponse) =>
    ((await get('/api/economy/ledger', user.access_token)).json().items as { kind: string; amount: number }[])
      .filter((entry) => entry.kind === 'grant')
      .map((entry) => entry.amount);

  /** A new account once its welcome gift arrived, so the balances a test reads are its own doing. */
  const player = async () => {
    const user = await registerUser(app());
    await vi.waitFor(async () => expect(await balanceOf(user)).toBe(WELCOME_COINS), EVENT_WAIT);
    return user;
  };

  describe('welcome gift (api.on user.registered)', () => {
    it('credits a new account once, after its registration committed', async () => {
      const user = await player();
      expect(await grantsOf(user)).toEqual([WELCOME_COINS]);
    });

    it('is audited with the extension as the actor', async () => {
      const user = await player();
      const admin = await registerWithRole(app(), 'admin');
      const audit = await get(`/api/admin/audit?actor=starter&target=${user.user.id}`, admin.access_token);
      expect(audit.json().items).toEqual([
        expect.objectContaining({
          actor_kind: 'extension',
          actor_id: 'starter',
          action: 'economy.grant',
          target_type: 'user',
          target_id: user.user.id,
          after: expect.objectContaining({ amount: WELCOME_COINS, reason: 'Welcome gift' }),
        }),
      ]);
    });
  });

  describe('daily reward (rpc daily.claim)', () => {
    let user: TokenResponse;
    let socket: TestSocket;
    beforeAll(async () => {
      user = await player();
      socket = await sockets.open(user.access_token);
    });

    it('grants the coins on the first claim of the day, over REST', async () => {
      const claimed = await post('/api/rpc/daily.claim', user.access_token);
      expect(claimed.statusCode).toBe(200);
      expect(claimed.json()).toEqual({
        result: { granted: true, balance: WELCOME_COINS + DAILY_COINS, streak: 1 },
      });
    });

    it('moves nothing on a second claim the same day, over the socket', async () => {
      const again = await request(socket, 'rpc', { name: 'daily.claim' });
      expect(again).toMatchObject({
        t: 'ack',
        d: { result: { granted: false, balance: WELCOME_COINS + DAILY_COINS, streak: 1 } },
      });
      expect(await balanceOf(user)).toBe(WELCOME_COINS + DAILY_COINS);
      expect(await grantsOf(user)).toEqual([DAILY_COINS, WELCOME_COINS]);
    });

    it('grants once when a player claims from several devices at once', async () => {
      const other = await player();
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => post('/api/rpc/daily.claim', other.access_token)),
      );
      const granted = answers.filter((answer) => answer.statusCode === 200 && answer.json().result.granted);
      expect(granted).toHaveLength(1);
      // A claim that met the first one still running is asked to tap again.
      for (const answer of answers.filter((answer) => answer.statusCode !== 200)) {
        expect(answer.statusCode).toBe(409);
        expect(answer.json().code).toBe('CLAIM_IN_PROGRESS');
      }
      expect(await balanceOf(other)).toBe(WELCOME_COINS + DAILY_COINS);
    });

    it('continues the streak the day after the last claim, and starts it over after a missed day', async () => {
      // The streak record as a claim on an earlier day left it (the test cannot wait for a day).
      const lastClaimed = async (day: string, streak: number) => {
        const someone = await player();
        await queryRows(
          app().db,
          `insert into extension_storage (extension, collection, key, user_id, value, version)
           values ('starter', 'daily', 'streak', ?, ?, 1)`,
          [someone.user.id, JSON.stringify({ last_day: day, streak })],
        );
        return (await post('/api/rpc/daily.claim', someone.access_token)).json().result;
      };
      expect(await lastClaimed(utcDay(-1), 4)).toEqual({
        granted: true,
        balance: expect.any(Number),
        streak: 5,
      });
      expect(await lastClaimed(utcDay(-2), 4)).toEqual({
        granted: true,
        balance: expect.any(Number),
        streak: 1,
      });
    });

    it('needs a signed-in user', async () => {
      const anonymous = await post('/api/rpc/daily.claim', undefined);
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json().code).toBe('UNAUTHENTICATED');
    });
  });

  describe('chat word rule (before hooks on every chat send)', () => {
    let alice: TokenResponse;
    let bob: TokenResponse;
    let socket: TestSocket;
    let world: { worldId: string; mainRoomId: string };
    beforeAll(async () => {
      [alice, bob] = [await registerUser(app()), await registerUser(app())];
      socket = await sockets.open(alice.access_token);
      world = await createWorld(app(), alice.access_token);
    });
    const dmHistory = async () =>
      (await get(`/api/chat/dm/${bob.user.id}/messages`, alice.access_token))
        .json()
        .items.map((message: { body: string }) => message.body);

    it('refuses a direct message with a refused word and stores nothing, on both transports', async () => {
      const rest = await post(`/api/chat/dm/${bob.user.id}/messages`, alice.access_token, {
        body: 'get FreeCoins here',
      });
      expect(rest.statusCode).toBe(422);
      expect(rest.json()).toMatchObject({ code: 'WORD_NOT_ALLOWED' });
      const frame = await request(socket, 'dm.send', { user_id: bob.user.id, body: 'freecoins!' });
      expect(frame).toMatchObject({ t: 'error', code: 'WORD_NOT_ALLOWED' });
      expect(await dmHistory()).toEqual([]);
    });

    it('masks a masked word as a whole word only, and stores the masked body', async () => {
      const frame = await request(socket, 'dm.send', {
        user_id: bob.user.id,
        body: 'what the Heck, check this',
      });
      expect(frame).toMatchObject({ t: 'ack', d: { body: 'what the ****, check this' } });
      const rest = await post(`/api/chat/dm/${bob.user.id}/messages`, alice.access_token, { body: 'heck' });
      expect(rest.json().body).toBe('****');
      expect(await dmHistory()).toEqual(['****', 'what the ****, check this']);
    });

    it('applies to world and room chat over REST (chat.sendToWorld, chat.sendToRoom)', async () => {
      const { worldId, mainRoomId } = world;
      const toWorld = await post(`/api/worlds/${worldId}/messages`, alice.access_token, { body: 'oh heck' });
      expect(toWorld.statusCode).toBe(201);
      expect(toWorld.json().body).toBe('oh ****');
      const toRoom = await post(`/api/worlds/${worldId}/rooms/${mainRoomId}/messages`, alice.access_token, {
        body: 'freecoins',
      });
      expect(toRoom.statusCode).toBe(422);
      expect(toRoom.json().code).toBe('WORD_NOT_ALLOWED');
    });

    it('applies to world and room chat over the socket (the chat.send frame)', async () => {
      const { worldId, mainRoomId } = world;
      const toRoom = await request(socket, 'chat.send', {
        world_id: worldId,
        room_id: mainRoomId,
        body: 'heck',
      });
      expect(toRoom).toMatchObject({ t: 'ack', d: { body: '****', room_id: mainRoomId } });
      const toWorld = await request(socket, 'chat.send', { world_id: worldId, body: 'freecoins' });
      expect(toWorld).toMatchObject({ t: 'error', code: 'WORD_NOT_ALLOWED' });
      const history = await get(`/api/worlds/${worldId}/messages`, alice.access_token);
      expect(history.json().items.map((message: { body: string }) => message.body)).toEqual(['oh ****']);
    });

    it('applies to group chat (chat.sendToGroup)', async () => {
      const group = await post('/api/groups', alice.access_token, { name: `g${randomUUID().slice(0, 8)}` });
      expect(group.statusCode).toBe(201);
      const sent = await request(socket, 'chat.sendToGroup', { group_id: group.json().id, body: 'heck no' });
      expect(sent).toMatchObject({ t: 'ack', d: { body: '**** no' } });
    });

    it('applies to party chat (chat.sendToParty and its REST route)', async () => {
      const party = await post('/api/parties', alice.access_token);
      expect(party.statusCode).toBe(201);
      const partyId = party.json().id;
      const sent = await request(socket, 'chat.sendToParty', { party_id: partyId, body: 'heck no' });
      expect(sent).toMatchObject({ t: 'ack', d: { body: '**** no' } });
      const refused = await post(`/api/parties/${partyId}/messages`, alice.access_token, {
        body: 'freecoins',
      });
      expect([refused.statusCode, refused.json().code]).toEqual([422, 'WORD_NOT_ALLOWED']);
    });
  });

  describe('tournament prizes (api.on tournament.ended)', () => {
    it("grants the top 10's prizes once when a tournament ends", async () => {
      const admin = await registerWithRole(app(), 'admin');
      const [first, second] = [await player(), await player()];
      const id = `prizes-${randomUUID().slice(0, 8)}`;
      // It ends in five seconds, time for two records on a loaded machine; the scheduler announces
      // its end within one more.
      const created = await post('/api/admin/tournaments', admin.access_token, {
        id,
        title: 'Lunch cup',
        join_required: false,
        start_at: new Date(Date.now() - 60_000).toISOString(),
        end_at: new Date(Date.now() + 5_000).toISOString(),
      });
      expect(created.statusCode).toBe(201);
      expect(
        (await post(`/api/tournaments/${id}/records`, first.access_token, { score: 90 })).statusCode,
      ).toBe(200);
      expect(
        (await post(`/api/tournaments/${id}/records`, second.access_token, { score: 40 })).statusCode,
      ).toBe(200);
      await vi.waitFor(async () => expect(await grantsOf(first)).toContain(1000), EVENT_WAIT);
      await vi.waitFor(async () => expect(await grantsOf(second)).toContain(600), EVENT_WAIT);
      expect(await balanceOf(first)).toBe(WELCOME_COINS + 1000);
    });
  });

  describe('match result (server rpc match.result)', () => {
    let owner: TokenResponse;
    let winner: TokenResponse;
    let serverToken: string;
    let worldId: string;
    beforeAll(async () => {
      [owner, winner] = [await registerUser(app()), await player()];
      ({ worldId } = await createWorld(app(), owner.access_token));
      await gameServerCalls(app).spawn(owner, worldId);
      serverToken = await vi.waitFor(() => {
        const token = launchesOf(servers.dir, worldId)[0]?.['server-token'];
        expect(token).toBeDefined();
        return token as string;
      }, EVENT_WAIT);
    });
    const report = (matchId: string, winnerId: string, token = serverToken) =>
      post('/internal/rpc/match.result', token, {
        match_id: matchId,
        winner_id: winnerId,
        scores: { [winnerId]: 3, [owner.user.id]: 1 },
      });

    it('grants the winner the prize once per match, however often the server reports it', async () => {
      const matchId = randomUUID();
      const first = await report(matchId, winner.user.id);
      expect(first.statusCode).toBe(200);
      expect(first.json()).toEqual({
        result: { match_id: matchId, winner_id: winner.user.id, prize: MATCH_PRIZE, replayed: false },
      });
      const retried = await report(matchId, winner.user.id);
      expect(retried.json().result).toMatchObject({ prize: MATCH_PRIZE, replayed: true });
      expect(await balanceOf(winner)).toBe(WELCOME_COINS + MATCH_PRIZE);
    });

    it('counts one win per match on the authoritative match-wins board through ctx.leaderboards', async () => {
      const admin = await registerWithRole(app(), 'admin');
      const created = await post('/api/admin/leaderboards', admin.access_token, {
        id: 'match-wins',
        operator: 'incr',
        authoritative: true,
      });
      expect(created.statusCode).toBe(201);
      const wins = async () =>
        (await get(`/api/leaderboards/match-wins/records/${winner.user.id}`, winner.access_token)).json();
      const [first, second] = [randomUUID(), randomUUID()];
      await report(first, winner.user.id);
      await report(first, winner.user.id);
      expect(await wins()).toMatchObject({ score: 1, rank: 1 });
      await report(second, winner.user.id);
      expect(await wins()).toMatchObject({ score: 2, num_submissions: 2 });
    });

    it('keeps the match, which players read back with match.get', async () => {
      const matchId = randomUUID();
      await report(matchId, winner.user.id);
      const socket = await sockets.open(winner.access_token);
      const read = await request(socket, 'rpc', { name: 'match.get', input: { match_id: matchId } });
      expect(read).toMatchObject({
        t: 'ack',
        d: {
          result: {
            world_id: worldId,
            server_id: expect.any(String),
            winner_id: winner.user.id,
            scores: { [winner.user.id]: 3, [owner.user.id]: 1 },
            transaction_id: expect.any(String),
          },
        },
      });
      const unknown = await post('/api/rpc/match.get', winner.access_token, { match_id: randomUUID() });
      expect(unknown.json()).toEqual({ result: null });
    });

    it('refuses another winner for a reported match, and a winner that names no account', async () => {
      const matchId = randomUUID();
      await report(matchId, winner.user.id);
      const otherWinner = await report(matchId, owner.user.id);
      expect(otherWinner.statusCode).toBe(409);
      expect(otherWinner.json().code).toBe('MATCH_ALREADY_REPORTED');
      const nobody = await report(randomUUID(), randomUUID());
      expect(nobody.statusCode).toBe(422);
      expect(nobody.json().code).toBe('UNKNOWN_PLAYER');
    });

    it('validates the report: 422 naming the field', async () => {
      const bad = await post('/internal/rpc/match.result', serverToken, {
        match_id: 'm 1',
        winner_id: 'x',
        scores: {},
      });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().errors).toEqual([expect.objectContaining({ path: 'body.match_id' })]);
    });

    it("serves game servers only: a user's token is refused, and the users' path does not know it", async () => {
      expect((await report(randomUUID(), winner.user.id, winner.access_token)).statusCode).toBe(401);
      const onUsersPath = await post('/api/rpc/match.result', winner.access_token, {});
      expect(onUsersPath.statusCode).toBe(404);
    });
  });

  describe('hello.mjs (plain JavaScript)', () => {
    it('greets anonymous callers, signed-in callers by name, and validates its input', async () => {
      expect((await post('/api/rpc/hello', undefined, { name: 'Ada' })).json()).toEqual({
        result: { greeting: 'Hello, Ada!' },
      });
      const user = await registerUser(app());
      const socket = await sockets.open(user.access_token);
      expect((await request(socket, 'rpc', { name: 'hello' })).d).toEqual({
        result: { greeting: `Hello, ${user.user.username}!` },
      });
      const bad = await post('/api/rpc/hello', undefined, { name: '' });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().errors).toEqual([expect.objectContaining({ path: 'body.name' })]);
    });
  });
});
