import { describe, expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { gameServerCalls, serversOfWorlds, silentCommand } from './gameservers.js';

/**
 * The limits on the servers a user causes (docs/gameservers.md, "Spawn limits"): live servers per
 * user, the node's last slots, the spawn rate. What several nodes share: limits-cluster.test.ts.
 */
describe('one user joining many worlds, with the default limits', () => {
  const { command } = silentCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command });
  const { call, join } = gameServerCalls(app);

  it('cannot lock other users out of a node: past the servers they may run, their joins are refused, recording nothing, and others still get in', async () => {
    const hostile = await registerUser(app());
    const worldIds: string[] = [];
    for (let i = 0; i < 8; i++)
      worldIds.push((await createWorld(app(), hostile.access_token, { visibility: 'unlisted' })).worldId);
    const joins = [];
    for (const worldId of worldIds) joins.push(await call('POST', `/api/worlds/${worldId}/join`, hostile));
    expect(joins.map((join) => join.statusCode)).toEqual([200, 200, 200, 409, 409, 409, 409, 409]);
    expect(joins[3]?.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 3 });
    expect(await serversOfWorlds(app().db, worldIds)).toHaveLength(3);

    const other = await registerUser(app());
    const theirs = await createWorld(app(), other.access_token, { visibility: 'unlisted' });
    expect((await join(other, theirs.worldId)).address).toMatch(/^127\.0\.0\.1:\d+$/);
  });
});

describe('the spawn rate', () => {
  const { command } = silentCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 2 });
  const { spawn, settled, join, expectStatus } = gameServerCalls(app);

  it('limits the servers a user causes per window: one more answers 429 with Retry-After and records nothing; joins that find a server spend nothing', async () => {
    const [host, user] = [await registerUser(app()), await registerUser(app())];
    const hosted = await createWorld(app(), host.access_token, { visibility: 'public' });
    const hostedServer = await settled(host, (await spawn(host, hosted.worldId)).server_id);
    expect((await join(user, hosted.worldId)).server_id).toBe(hostedServer.server_id);

    const own = await createWorld(app(), user.access_token, { visibility: 'public' });
    for (let i = 0; i < 2; i++) {
      const server = await spawn(user, own.worldId);
      await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, user);
    }
    const recorded = await serversOfWorlds(app().db, [own.worldId]);
    const refused = await expectStatus(429, 'POST', `/api/worlds/${own.worldId}/servers`, user);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(600);
    // A join that would start a server is refused the same way.
    expect((await expectStatus(429, 'POST', `/api/worlds/${own.worldId}/join`, user)).json()).toMatchObject({
      code: 'RATE_LIMITED',
    });
    expect(await serversOfWorlds(app().db, [own.worldId])).toEqual(recorded);
    // Joining a world whose server runs needs no spawn.
    expect((await join(user, hosted.worldId)).server_id).toBe(hostedServer.server_id);
  });
});

describe('the last slots of a node', () => {
  const { command } = silentCommand();
  const app = useTestApp({
    GAMESERVER_COMMAND: command,
    GAMESERVER_MAX_RUNNING: 4,
    GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 10,
    GAMESERVER_MAX_LIVE_PER_USER: 10,
  });
  const { spawn, expectStatus } = gameServerCalls(app);

  it('are kept for users who run no server: one who does is refused 503 GAMESERVER_CAPACITY there, recording nothing, and another user takes the slot', async () => {
    const [busy, newcomer] = [await registerUser(app()), await registerUser(app())];
    const worldIds: string[] = [];
    for (let i = 0; i < 5; i++)
      worldIds.push((await createWorld(app(), busy.access_token, { visibility: 'public' })).worldId);
    for (const worldId of worldIds.slice(0, 3)) await spawn(busy, worldId);
    const refused = await expectStatus(503, 'POST', `/api/worlds/${worldIds[3]}/servers`, busy);
    expect(refused.json()).toMatchObject({
      code: 'GAMESERVER_CAPACITY',
      detail: expect.stringContaining('keeps its last 1 game server slots'),
    });
    const refusedJoin = await expectStatus(503, 'POST', `/api/worlds/${worldIds[4]}/join`, busy);
    expect(refusedJoin.json()).toMatchObject({ code: 'GAMESERVER_CAPACITY' });
    expect(await serversOfWorlds(app().db, worldIds.slice(3))).toEqual([]);

    const theirs = await createWorld(app(), newcomer.access_token);
    await spawn(newcomer, theirs.worldId);
    // The node is full now, for everyone.
    const another = await createWorld(app(), newcomer.access_token);
    expect(
      (await expectStatus(503, 'POST', `/api/worlds/${another.worldId}/servers`, newcomer)).json(),
    ).toMatchObject({ code: 'GAMESERVER_CAPACITY' });
  });
});

describe('the running-server limit under concurrent spawns', () => {
  const { command } = silentCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_MAX_RUNNING: 2 });
  const { call } = gameServerCalls(app);

  it('counts a start from the moment it passes the check: of four spawns at once two start and two are refused 503, recording nothing', async () => {
    const owners = await Promise.all(Array.from({ length: 4 }, () => registerUser(app())));
    const worldIds = await Promise.all(
      owners.map(async (owner) => (await createWorld(app(), owner.access_token)).worldId),
    );
    const spawns = await Promise.all(
      owners.map((owner, i) => call('POST', `/api/worlds/${worldIds[i]}/servers`, owner)),
    );
    expect(spawns.map((spawn) => spawn.statusCode).sort()).toEqual([202, 202, 503, 503]);
    expect(await serversOfWorlds(app().db, worldIds)).toHaveLength(2);
    expect(app().modules.gameservers.spawner.running).toBe(2);
  });
});
