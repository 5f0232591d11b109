import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TokenResponse } from '../../protocol/auth.js';
import { AtriumClient } from '../../protocol/client.js';
import type { ServerInviteEvent } from '../../protocol/gameservers.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets, request, type TestSocket } from '../helpers/ws-client.js';
import { socialGraph } from '../social/graph.js';
import { expectProblem, gameServerCalls, silentCommand } from './gameservers.js';

type Position = { offset: number; epoch: string };

/**
 * Invitations to a server (docs/gameservers.md, "Server invitations"): its owner alone invites,
 * checked in the contract's order with nothing written on refusal, a second invitation changes
 * nothing, and the invitee hears of the first on their own recorded topic.
 */
describe('server invitations', () => {
  const { command } = silentCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_MAX_RUNNING: 16 });
  const { invite, joinWith, expectStatus } = gameServerCalls(app);
  const { users } = socialGraph(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());

  const invitationsOf = (serverId: string) =>
    queryRows<{ user_id: string; invited_by: string }>(
      app().db,
      'select user_id, invited_by from game_server_invitations where server_id = ? order by user_id',
      [serverId],
    );
  /** A server of a public world of `owner`'s, started by their join with this access. */
  const ownServer = async (owner: TokenResponse, access: 'public' | 'friends' | 'invite' = 'invite') => {
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const joined = await joinWith(owner, worldId, { access });
    expect(joined.statusCode, joined.body).toBe(200);
    return { worldId, serverId: joined.json().server_id as string };
  };
  const invitesHeard = (socket: TestSocket, serverId: string) =>
    socket.frames.filter(
      (frame) => frame.t === 'server.invite' && (frame.d as { server_id: string }).server_id === serverId,
    );

  it("answers 201 with the invitation and tells the invitee's sockets with server.invite, recorded for a reconnect to recover", async () => {
    const [owner, invitee] = await users(2);
    const socket = await sockets.open(invitee.access_token);
    const first = await ownServer(owner);
    const created = await invite(owner, first.serverId, invitee.user.id);
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toEqual({
      server_id: first.serverId,
      user_id: invitee.user.id,
      invited_by: owner.user.id,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    const heard = await socket.next((frame) => frame.t === 'server.invite');
    expect(heard.d).toEqual({
      server_id: first.serverId,
      world_id: first.worldId,
      from: { user_id: owner.user.id, username: owner.user.username },
    });
    const last = heard.pos as Position;
    expect(last).toMatchObject({ offset: expect.any(Number), epoch: expect.any(String) });

    socket.close();
    await socket.closed;
    const second = await ownServer(owner, 'friends');
    expect((await invite(owner, second.serverId, invitee.user.id)).statusCode).toBe(201);
    const again = await sockets.open();
    const ack = await request(again, 'auth', { token: invitee.access_token, recover: last });
    expect(ack).toMatchObject({ t: 'ack', d: { recovered: true } });
    const replayed = again.frames.filter((frame) => frame.t === 'server.invite');
    expect(replayed.map((frame) => [(frame.d as { server_id: string }).server_id, frame.pos])).toEqual([
      [second.serverId, { ...last, offset: last.offset + 1 }],
    ]);
  });

  it('is typed in AtriumClient: the owner invites with call, the invitee hears server.invite with on and joins the server named', async () => {
    const [owner, invitee] = await users(2);
    const { worldId, serverId } = await ownServer(owner);
    const options = { httpUrl: app().httpUrl, wsUrl: app().wsUrl, WebSocket };
    const [ownerClient, inviteeClient] = [
      new AtriumClient({ ...options, accessToken: owner.access_token }),
      new AtriumClient({ ...options, accessToken: invitee.access_token }),
    ];
    try {
      await inviteeClient.ready();
      const heard = new Promise<ServerInviteEvent>((resolve) => inviteeClient.on('server.invite', resolve));
      const invitation = await ownerClient.call('parties.inviteToServer', {
        server_id: serverId,
        user_id: invitee.user.id,
      });
      expect(invitation).toMatchObject({ server_id: serverId, user_id: invitee.user.id });
      const event = await heard;
      expect(event.from).toEqual({ user_id: owner.user.id, username: owner.user.username });
      const joined = await inviteeClient.call('worlds.join', {
        world_id: event.world_id,
        server_id: event.server_id,
      });
      expect(joined).toMatchObject({ server_id: serverId, world_id: worldId });
    } finally {
      ownerClient.close();
      inviteeClient.close();
    }
  });

  it('answers an invitation again with the one held, 201, and changes nothing else: no row, no event', async () => {
    const [owner, invitee] = await users(2);
    const socket = await sockets.open(invitee.access_token);
    const { serverId } = await ownServer(owner);
    const first = await invite(owner, serverId, invitee.user.id);
    const second = await invite(owner, serverId, invitee.user.id);
    expect(second.statusCode).toBe(201);
    expect(second.json()).toEqual(first.json());
    expect(await invitationsOf(serverId)).toEqual([{ user_id: invitee.user.id, invited_by: owner.user.id }]);
    // A later invitation arrives after any the second could have sent.
    const sentinel = await ownServer(owner, 'friends');
    expect((await invite(owner, sentinel.serverId, invitee.user.id)).statusCode).toBe(201);
    await socket.next(
      (frame) =>
        frame.t === 'server.invite' && (frame.d as { server_id: string }).server_id === sentinel.serverId,
    );
    expect(invitesHeard(socket, serverId)).toHaveLength(1);
  });

  it('refuses, in order and writing nothing: no such server 404, not its owner 403, the caller 422, an unknown user 404, a block either way 403, an ended server 409', async () => {
    const [owner, worldOwner, stranger, invitee, blocker, blocked] = await users(6);
    const socket = await sockets.open(invitee.access_token);
    const { worldId } = await createWorld(app(), worldOwner.access_token, { visibility: 'public' });
    // The owner's join started this server in someone else's world: the world's owner does not own it.
    const joined = await joinWith(owner, worldId, { access: 'invite' });
    const serverId = joined.json().server_id as string;
    const ended = await ownServer(owner);
    await expectStatus(204, 'DELETE', `/api/servers/${ended.serverId}`, owner);
    await expectStatus(204, 'PUT', `/api/blocks/${owner.user.id}`, blocker);
    await expectStatus(204, 'PUT', `/api/blocks/${blocked.user.id}`, owner);
    const unknownId = '01a1ffb2-0000-7000-8000-000000000000';
    const refusals: [TokenResponse, string, string, number, string][] = [
      [owner, unknownId, invitee.user.id, 404, 'NOT_FOUND'],
      [owner, 'not-a-server', owner.user.id, 404, 'NOT_FOUND'],
      [worldOwner, serverId, invitee.user.id, 403, 'FORBIDDEN'],
      [stranger, serverId, stranger.user.id, 403, 'FORBIDDEN'],
      [owner, serverId, owner.user.id, 422, 'VALIDATION_FAILED'],
      [owner, serverId, owner.user.id.toUpperCase(), 422, 'VALIDATION_FAILED'],
      [owner, serverId, unknownId, 404, 'NOT_FOUND'],
      [owner, serverId, 'nobody', 404, 'NOT_FOUND'],
      [owner, serverId, blocker.user.id, 403, 'FORBIDDEN'],
      [owner, serverId, blocked.user.id, 403, 'FORBIDDEN'],
      [owner, ended.serverId, unknownId, 404, 'NOT_FOUND'],
      [owner, ended.serverId, blocker.user.id, 403, 'FORBIDDEN'],
      [owner, ended.serverId, invitee.user.id, 409, 'CONFLICT'],
    ];
    for (const [caller, server, userId, status, code] of refusals)
      expectProblem(await invite(caller, server, userId), status, code);
    for (const body of [{}, { user_id: 7 }, { user_id: invitee.user.id, extra: true }])
      expectProblem(
        await app().http.inject({
          method: 'POST',
          url: `/api/servers/${serverId}/invites`,
          headers: { authorization: `Bearer ${owner.access_token}` },
          payload: body,
        }),
        422,
        'VALIDATION_FAILED',
      );
    expect(await invitationsOf(serverId)).toEqual([]);
    expect(await invitationsOf(ended.serverId)).toEqual([]);
    // The invitation made afterwards is the only one the invitee hears of.
    expect((await invite(owner, serverId, invitee.user.id)).statusCode).toBe(201);
    await socket.next((frame) => frame.t === 'server.invite');
    expect(socket.frames.filter((frame) => frame.t === 'server.invite')).toEqual([]);
  });
});

/**
 * The invitation rate: SOCIAL_RATE_LIMIT_COUNT per SOCIAL_RATE_LIMIT_WINDOW_SECONDS per inviter,
 * a bucket apart from friend requests and follows.
 */
describe('the server invitation rate', () => {
  const { command } = silentCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    SOCIAL_RATE_LIMIT_COUNT: 3,
    SOCIAL_RATE_LIMIT_WINDOW_SECONDS: 60,
  });
  const { invite, joinWith, call, expectStatus } = gameServerCalls(app);
  const { users } = socialGraph(app);

  it('answers 429 with Retry-After past the limit, writing nothing; refusals cost nothing, and friend requests spend from another bucket', async () => {
    const [owner, a, b, c, d, e, f] = await users(7);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const serverId = (await joinWith(owner, worldId, { access: 'invite' })).json().server_id as string;
    // Friend requests up to their own limit.
    for (const user of [d, e, f])
      await expectStatus(201, 'POST', '/api/friends/requests', owner, { user_id: user.user.id });
    expectProblem(
      await call('POST', '/api/friends/requests', owner, { user_id: a.user.id }),
      429,
      'RATE_LIMITED',
    );
    // Refused invitations spend nothing.
    for (let i = 0; i < 4; i++)
      expectProblem(await invite(owner, serverId, owner.user.id), 422, 'VALIDATION_FAILED');
    // Three invitations, the second of them made again: the limit is reached.
    expect((await invite(owner, serverId, a.user.id)).statusCode).toBe(201);
    expect((await invite(owner, serverId, b.user.id)).statusCode).toBe(201);
    expect((await invite(owner, serverId, b.user.id)).statusCode).toBe(201);
    const refused = await invite(owner, serverId, c.user.id);
    expectProblem(refused, 429, 'RATE_LIMITED');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const rows = await queryRows<{ user_id: string }>(
      app().db,
      'select user_id from game_server_invitations where server_id = ? order by user_id',
      [serverId],
    );
    expect(rows.map((row) => row.user_id)).toEqual([a.user.id, b.user.id].sort());
    // Another inviter is not limited by this one.
    const other = (await joinWith(c, worldId, { access: 'invite' })).json().server_id as string;
    expect((await invite(c, other, owner.user.id)).statusCode).toBe(201);
  });
});
