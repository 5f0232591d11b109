import { decode } from '@msgpack/msgpack';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CloseCode } from '../../protocol/frames.js';
import { auditEntriesOf } from '../audit/audit.js';
import { PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { request, TestSocket } from '../helpers/ws-client.js';
import { gameServerCalls, launchesOf, recordingCommand } from './gameservers.js';

const node = JSON.stringify;

describe('a spawned game server with the reference program', () => {
  const { command, dir } = recordingCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_READY_TIMEOUT_MS: 20_000 });
  const { spawn, settled, internal, expectStatus, get, putChunk } = gameServerCalls(app);

  it('starts, reports ready with its address, reads its world with its token, and its token dies when it is stopped', async () => {
    const owner = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    const started = await spawn(owner, worldId);
    expect(started).toMatchObject({ world_id: worldId, status: 'starting', address: null, backend: 'local' });
    const ready = await settled(owner, started.server_id);
    expect(ready).toMatchObject({ status: 'ready', address: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });

    const [launch] = launchesOf(dir, worldId);
    const token = launch?.['server-token'] as string;
    expect(launch).toMatchObject({
      'world-id': worldId,
      'api-url': app().httpUrl,
      'ws-url': app().wsUrl,
      port: expect.stringMatching(/^\d+$/),
    });
    expect(ready.address).toBe(`127.0.0.1:${launch?.port}`);
    const world = await internal(token, `/internal/worlds/${worldId}`);
    expect(world.statusCode).toBe(200);
    expect(world.json()).toMatchObject({ id: worldId, rooms: [{ id: mainRoomId }] });
    expect((await internal(token, `/internal/worlds/${worldId}/rooms`)).json()).toMatchObject({
      items: [{ id: mainRoomId }],
    });
    const bulk = await internal(token, `/internal/worlds/${worldId}/rooms/${mainRoomId}/chunks`);
    expect(bulk.headers['content-type']).toContain('application/msgpack');
    expect(decode(bulk.rawPayload)).toEqual({ content_revision: 0, count: 0, chunks: [] });
    expect(
      (await internal(token, `/internal/worlds/${worldId}/rooms/${mainRoomId}/chunks/0/0/0`)).statusCode,
    ).toBe(404);

    await expectStatus(204, 'DELETE', `/api/servers/${started.server_id}`, owner);
    expect(await get(owner, started.server_id)).toMatchObject({ status: 'stopped', error: null });
    expect((await internal(token, `/internal/worlds/${worldId}`)).statusCode).toBe(401);
    expect(app().modules.gameservers.spawner.runningIds()).not.toContain(started.server_id);
    const [row] = await queryRows(app().db, 'select token_hash from game_servers where id = ?', [
      started.server_id,
    ]);
    expect(row?.token_hash).toBeNull();
    // Stopping again changes nothing.
    await expectStatus(204, 'DELETE', `/api/servers/${started.server_id}`, owner);
  });

  it("refuses a server token for another world's content (403) and user access tokens on /internal (401)", async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const other = await createWorld(app(), owner.access_token);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    const foreign = await internal(token, `/internal/worlds/${other.worldId}`);
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json()).toMatchObject({ code: 'FORBIDDEN' });
    const userOnInternal = await internal(owner.access_token, `/internal/worlds/${worldId}`);
    expect(userOnInternal.statusCode).toBe(401);
    expect(userOnInternal.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await internal(token, '/api/users/me')).statusCode).toBe(401);
    expect((await internal(`gs_${'A'.repeat(43)}`, `/internal/worlds/${worldId}`)).statusCode).toBe(401);
    await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
  });

  it('validates the status report: ready without an address or a malformed address is 422 and changes nothing', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    for (const payload of [
      { ready: true },
      { ready: true, address: 'no port' },
      { ready: true, address: 'h:1', players: -1 },
    ]) {
      const refused = await internal(token, '/internal/servers/self/status', { method: 'PUT', payload });
      expect(refused.statusCode, node(payload)).toBe(422);
    }
    expect(await get(owner, server.server_id)).toMatchObject({
      address: server.address,
      players: server.players,
    });
    await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
  });

  it('lets only the owner or an admin spawn and stop, hides servers from strangers, and writes nothing when refused', async () => {
    const [owner, stranger] = [await registerUser(app()), await registerUser(app())];
    const admin = await registerWithRole(app(), 'admin');
    const open = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const hidden = await createWorld(app(), owner.access_token, { visibility: 'private' });
    expect(
      (await expectStatus(403, 'POST', `/api/worlds/${open.worldId}/servers`, stranger)).json(),
    ).toMatchObject({ code: 'FORBIDDEN' });
    await expectStatus(404, 'POST', `/api/worlds/${hidden.worldId}/servers`, stranger);
    await expectStatus(404, 'POST', '/api/worlds/not-a-world/servers', owner);
    expect(
      await queryRows(app().db, 'select id from game_servers where world_id = any(?::uuid[])', [
        `{${open.worldId},${hidden.worldId}}`,
      ]),
    ).toEqual([]);

    const byAdmin = await spawn(admin, hidden.worldId);
    await expectStatus(404, 'GET', `/api/servers/${byAdmin.server_id}`, stranger);
    await expectStatus(404, 'DELETE', `/api/servers/${byAdmin.server_id}`, stranger);
    expect((await get(owner, byAdmin.server_id)).world_id).toBe(hidden.worldId);
    await expectStatus(204, 'DELETE', `/api/servers/${byAdmin.server_id}`, owner);
    await expectStatus(404, 'GET', '/api/servers/00000000-0000-7000-8000-000000000000', admin);
  });

  it("records an admin's stop of another's server in the audit log, and not an owner's stop of their own", async () => {
    const owner = await registerUser(app());
    const admin = await registerWithRole(app(), 'admin');
    const { worldId } = await createWorld(app(), owner.access_token);
    const byAdmin = await spawn(owner, worldId);
    await expectStatus(204, 'DELETE', `/api/servers/${byAdmin.server_id}`, admin);
    const byOwner = await spawn(owner, worldId);
    await expectStatus(204, 'DELETE', `/api/servers/${byOwner.server_id}`, owner);
    expect(await auditEntriesOf(app().db, byAdmin.server_id)).toEqual([
      {
        actor_kind: 'user',
        actor_id: admin.user.id,
        action: 'gameservers.stop',
        target_type: 'game_server',
        target_id: byAdmin.server_id,
        // The server may have reported ready meanwhile.
        before: { status: expect.stringMatching(/^(starting|ready)$/), world_id: worldId },
        after: { status: 'stopped' },
      },
    ]);
    expect(await auditEntriesOf(app().db, byOwner.server_id)).toEqual([]);
  });

  it("lets a game server's socket follow its own world's chunk stream, and nothing else, until the server stops", async () => {
    const owner = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    const other = await createWorld(app(), owner.access_token);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    const socket = await TestSocket.connect(app().wsUrl);
    try {
      const ack = await request(socket, 'auth', { token });
      expect(ack).toMatchObject({ t: 'ack', d: { server_id: server.server_id, world_id: worldId } });
      expect(await request(socket, 'chunks.subscribe', { world_id: worldId })).toMatchObject({
        t: 'ack',
        d: { world_id: worldId, content_revision: 0 },
      });
      expect(await request(socket, 'chunks.subscribe', { world_id: other.worldId })).toMatchObject({
        t: 'error',
        code: 'FORBIDDEN',
      });
      // A user's frame from a known socket of another kind: forbidden, not unauthenticated.
      expect(await request(socket, 'presence.heartbeat')).toMatchObject({
        t: 'error',
        code: 'FORBIDDEN',
      });
      expect(await request(socket, 'rpc', { name: 'anything' })).toMatchObject({
        t: 'error',
        code: 'FORBIDDEN',
      });
      // A commit by the owner reaches the server's socket.
      await putChunk(owner, worldId, mainRoomId, 'server-stream');
      await socket.next((frame) => frame.t === 'chunks.commit');
      await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
      expect((await socket.closed).code).toBe(CloseCode.SESSION_ENDED);
    } finally {
      socket.close();
    }
  });

  it("has the reference server follow its world's chunk commits over the gateway with its token", async () => {
    const owner = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    const output = () => launchesOf(dir, worldId)[0]?.output ?? '';
    await vi.waitFor(() => expect(output()).toContain(`following world ${worldId} from content revision 0`));
    await putChunk(owner, worldId, mainRoomId, 'followed');
    await vi.waitFor(() => expect(output()).toContain('applied commit: content revision'));
    await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
  });

  it('refuses a dead or unknown server token in the auth frame with UNAUTHENTICATED', async () => {
    const socket = await TestSocket.connect(app().wsUrl);
    try {
      expect(await request(socket, 'auth', { token: `gs_${'B'.repeat(43)}` })).toMatchObject({
        t: 'error',
        code: 'UNAUTHENTICATED',
      });
    } finally {
      socket.close();
    }
  });

  it('hands ten concurrent joins the same ready server, started once', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const players = await Promise.all(Array.from({ length: 10 }, () => registerUser(app())));
    const joins = await Promise.all(
      players.map((player) => expectStatus(200, 'POST', `/api/worlds/${worldId}/join`, player)),
    );
    const answers = joins.map((join) => join.json() as { server_id: string; address: string });
    expect(new Set(answers.map((a) => a.server_id)).size).toBe(1);
    expect(new Set(answers.map((a) => a.address)).size).toBe(1);
    expect(launchesOf(dir, worldId)).toHaveLength(1);
    expect((await get(owner, answers[0]?.server_id as string)).players).toBe(10);
    await expectStatus(204, 'DELETE', `/api/servers/${answers[0]?.server_id}`, owner);
  });

  it("records each join as a visit of the world, counted in its discovery metadata by the fold; visits outlive the visitor's account and go with the world", async () => {
    const [owner, visitor] = [await registerUser(app()), await registerUser(app())];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const first = (await expectStatus(200, 'POST', `/api/worlds/${worldId}/join`, visitor)).json();
    await expectStatus(200, 'POST', `/api/worlds/${worldId}/join`, owner);
    const visits = () =>
      queryRows(
        app().db,
        'select user_id, server_id from world_visits where world_id = ? order by visited_at',
        [worldId],
      );
    expect(await visits()).toEqual([
      { user_id: visitor.user.id, server_id: first.server_id },
      { user_id: owner.user.id, server_id: first.server_id },
    ]);
    // Counted by the fold job (docs/discovery.md), not by the joins themselves.
    expect(await app().modules.discovery.foldVisits()).toBeGreaterThanOrEqual(2);
    const [discovery] = await queryRows(
      app().db,
      'select visit_count, unique_visitors from world_discovery where world_id = ?',
      [worldId],
    );
    expect([Number(discovery?.visit_count), Number(discovery?.unique_visitors)]).toEqual([2, 2]);

    await expectStatus(204, 'DELETE', '/api/users/me', visitor, { password: PASSWORD });
    expect((await visits()).map((visit) => visit.user_id)).toEqual([null, owner.user.id]);
    await expectStatus(204, 'DELETE', `/api/worlds/${worldId}`, owner);
    expect(await visits()).toEqual([]);
    expect(await queryRows(app().db, 'select 1 from world_discovery where world_id = ?', [worldId])).toEqual(
      [],
    );
  });

  it('refuses joins of a world the caller may not read (404), starting nothing', async () => {
    const [owner, stranger] = [await registerUser(app()), await registerUser(app())];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'private' });
    await expectStatus(404, 'POST', `/api/worlds/${worldId}/join`, stranger);
    expect(launchesOf(dir, worldId)).toEqual([]);
  });
});

describe('GAMESERVER_PUBLIC_HOST', () => {
  const { command, dir } = recordingCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_PUBLIC_HOST: 'play.example.test' });
  const { spawn, settled, expectStatus } = gameServerCalls(app);

  it('is the host local servers report to players, and nothing else of the service reaches their environment', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    expect(server.address).toMatch(/^play\.example\.test:\d+$/);
    // The allowlist (PATH, HOME, LANG, TZ, TMPDIR, NODE_OPTIONS) where set, and PUBLIC_HOST.
    const env = (launchesOf(dir, worldId)[0]?.env ?? '').split(',');
    expect(env).toContain('PUBLIC_HOST');
    expect(
      env.filter(
        (name) => !['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'NODE_OPTIONS', 'PUBLIC_HOST'].includes(name),
      ),
    ).toEqual([]);
    await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
  });
});

describe('a game server that never reports ready', () => {
  const app = useTestApp({
    GAMESERVER_COMMAND: node([process.execPath, '-e', 'setInterval(() => {}, 1000)', '--']),
    GAMESERVER_READY_TIMEOUT_MS: 1_500,
  });
  const { spawn, settled, get, expectStatus } = gameServerCalls(app);

  it('fails at its deadline with a clear error, its process stopped and its token revoked', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const started = await spawn(owner, worldId);
    expect(app().modules.gameservers.spawner.runningIds()).toContain(started.server_id);
    const failed = await settled(owner, started.server_id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('did not report ready within 1500 ms'),
    });
    await vi.waitFor(() =>
      expect(app().modules.gameservers.spawner.runningIds()).not.toContain(started.server_id),
    );
    const [row] = await queryRows(app().db, 'select token_hash from game_servers where id = ?', [
      started.server_id,
    ]);
    expect(row?.token_hash).toBeNull();
  });

  it('fails with the same error when a sweep finds it past its deadline before its timer does', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const started = await spawn(owner, worldId);
    // As when the node that spawned it, and so its timer, is gone: the deadline passed unseen.
    await queryRows(
      app().db,
      "update game_servers set ready_deadline = now() - interval '1 second' where id = ?",
      [started.server_id],
    );
    // Reading the server sweeps its world's overdue servers first.
    expect(await get(owner, started.server_id)).toMatchObject({
      status: 'failed',
      error: 'The server did not report ready within 1500 ms.',
    });
  });

  it('answers a join 503 GAMESERVER_UNAVAILABLE when the server it started fails', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const refused = await expectStatus(503, 'POST', `/api/worlds/${worldId}/join`, owner);
    expect(refused.json()).toMatchObject({ code: 'GAMESERVER_UNAVAILABLE' });
  });
});

describe('a crashing game server', () => {
  const app = useTestApp({
    GAMESERVER_COMMAND: node([process.execPath, '-e', 'setTimeout(() => process.exit(3), 200)', '--']),
  });
  const { spawn, settled } = gameServerCalls(app);

  it('becomes failed with its exit code and its token revoked', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const failed = await settled(owner, (await spawn(owner, worldId)).server_id);
    expect(failed).toMatchObject({ status: 'failed', error: 'The game server exited with code 3.' });
    const [row] = await queryRows(app().db, 'select token_hash from game_servers where id = ?', [
      failed.server_id,
    ]);
    expect(row?.token_hash).toBeNull();
  });
});

describe('the running-server limit', () => {
  const app = useTestApp({
    GAMESERVER_COMMAND: node([process.execPath, '-e', 'setInterval(() => {}, 1000)', '--']),
    GAMESERVER_MAX_RUNNING: 1,
  });
  const { spawn, expectStatus, call } = gameServerCalls(app);

  it('answers 503 GAMESERVER_CAPACITY past GAMESERVER_MAX_RUNNING, keeping no record of the refused spawn', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const first = await spawn(owner, worldId);
    const refused = await expectStatus(503, 'POST', `/api/worlds/${worldId}/servers`, owner);
    expect(refused.json()).toMatchObject({ code: 'GAMESERVER_CAPACITY' });
    expect(await queryRows(app().db, 'select id from game_servers where world_id = ?', [worldId])).toEqual([
      { id: first.server_id },
    ]);
    await expectStatus(204, 'DELETE', `/api/servers/${first.server_id}`, owner);
  });

  it('answers concurrent joins 503 at once when the server they would share cannot be started', async () => {
    const owner = await registerUser(app());
    const busy = await createWorld(app(), owner.access_token);
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const running = await spawn(owner, busy.worldId);
    const joins = await Promise.all(
      Array.from({ length: 3 }, () => call('POST', `/api/worlds/${worldId}/join`, owner)),
    );
    for (const join of joins) {
      expect(join.statusCode, join.body).toBe(503);
      expect(['GAMESERVER_CAPACITY', 'GAMESERVER_UNAVAILABLE']).toContain(join.json().code);
    }
    expect(await queryRows(app().db, 'select id from game_servers where world_id = ?', [worldId])).toEqual(
      [],
    );
    await expectStatus(204, 'DELETE', `/api/servers/${running.server_id}`, owner);
  });
});

describe('game servers across two nodes', () => {
  const { command, dir } = recordingCommand();
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await buildTestCluster(2, { GAMESERVER_COMMAND: command, GAMESERVER_READY_TIMEOUT_MS: 20_000 });
  });
  afterAll(() => cluster?.close());
  const a = () => cluster.nodes[0] as TestCluster['nodes'][number];
  const b = () => cluster.nodes[1] as TestCluster['nodes'][number];

  it('stops the process on the node that runs it when another node is asked, and the token dies at once', async () => {
    const owner = await registerUser(a());
    const { worldId } = await createWorld(a(), owner.access_token);
    const onA = gameServerCalls(a);
    const onB = gameServerCalls(b);
    const server = await onA.settled(owner, (await onA.spawn(owner, worldId)).server_id);
    expect(server.status).toBe('ready');
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    await onB.expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
    expect((await onA.internal(token, `/internal/worlds/${worldId}`)).statusCode).toBe(401);
    await vi.waitFor(
      () => expect(a().modules.gameservers.spawner.runningIds()).not.toContain(server.server_id),
      {
        timeout: 10_000,
      },
    );
  });

  it("stops a world's servers when the world is deleted", async () => {
    const owner = await registerUser(a());
    const { worldId } = await createWorld(a(), owner.access_token);
    const onA = gameServerCalls(a);
    const server = await onA.settled(owner, (await onA.spawn(owner, worldId)).server_id);
    await onA.expectStatus(204, 'DELETE', `/api/worlds/${worldId}`, owner);
    await vi.waitFor(
      () => expect(a().modules.gameservers.spawner.runningIds()).not.toContain(server.server_id),
      {
        timeout: 10_000,
      },
    );
  });

  it('lets a join on one node wait for the server a join on the other node started', async () => {
    const owner = await registerUser(a());
    const { worldId } = await createWorld(a(), owner.access_token, { visibility: 'public' });
    const [first, second] = await Promise.all([
      gameServerCalls(a).expectStatus(200, 'POST', `/api/worlds/${worldId}/join`, owner),
      gameServerCalls(b).expectStatus(200, 'POST', `/api/worlds/${worldId}/join`, owner),
    ]);
    expect(first.json().server_id).toBe(second.json().server_id);
    expect(launchesOf(dir, worldId)).toHaveLength(1);
  });
});
