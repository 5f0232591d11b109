import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { gameServerCalls, launchesOf, silentCommand } from '../gameservers/gameservers.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets, request, type TestSocket } from '../helpers/ws-client.js';

const KIT = fileURLToPath(new URL('./fixtures/kit.mjs', import.meta.url));
const seen = () => (globalThis as { kitSeen?: { late: unknown[] } }).kitSeen as { late: unknown[] };

/** The rpc rules of docs/extensions.md on REST (/api and /internal) and on the socket. */
describe('extension rpcs', () => {
  const servers = silentCommand();
  const app = useTestApp({ EXTENSIONS: KIT, EXTENSION_TIMEOUT_MS: 300, GAMESERVER_COMMAND: servers.command });
  const sockets = openedSockets(() => app().wsUrl);
  let alice: TokenResponse;
  let socket: TestSocket;
  beforeAll(async () => {
    alice = await registerUser(app());
    socket = await sockets.open(alice.access_token);
  });
  afterAll(() => sockets.closeAll());

  const post = (url: string, payload?: unknown, token?: string) =>
    app().http.inject({
      method: 'POST',
      url,
      headers: {
        ...(token ? bearer(token) : {}),
        ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });
  /** A body sent as this JSON text, exactly. */
  const postJson = (url: string, json: string, token: string) =>
    app().http.inject({
      method: 'POST',
      url,
      headers: { ...bearer(token), 'content-type': 'application/json' },
      payload: json,
    });

  it('answers a user rpc {result} over REST and over the socket, with the caller as the account', async () => {
    const rest = await post('/api/rpc/whoami', undefined, alice.access_token);
    expect(rest.statusCode).toBe(200);
    const caller = { user_id: alice.user.id, username: alice.user.username, roles: ['user'] };
    expect(rest.json()).toEqual({ result: { caller, server: null } });
    const frame = await request(socket, 'rpc', { name: 'whoami' });
    expect(frame).toMatchObject({ t: 'ack', d: { result: { caller, server: null } } });
  });

  it('passes the input as sent without a schema, and answers undefined as null', async () => {
    const sent = '{"a":[1,"two"],"__proto__":{"x":1}}';
    const rest = await postJson('/api/rpc/echo', sent, alice.access_token);
    expect(JSON.stringify(rest.json().result.input)).toBe(sent);
    const frame = await request(socket, 'rpc', { name: 'echo', input: 'text' });
    expect(frame.d).toMatchObject({ result: { input: 'text' } });
    expect((await post('/api/rpc/nothing', undefined, alice.access_token)).json()).toEqual({ result: null });
    expect((await request(socket, 'rpc', { name: 'nothing' })).d).toEqual({ result: null });
  });

  it('lets anonymous callers call a public rpc, with a null caller, and names the caller who sent a token', async () => {
    const anonymous = await post('/api/rpc/echo', 1);
    expect(anonymous.statusCode).toBe(200);
    expect(anonymous.json()).toEqual({ result: { input: 1, caller: null } });
    const signedIn = await post('/api/rpc/echo', 1, alice.access_token);
    expect(signedIn.json().result.caller.user_id).toBe(alice.user.id);
    expect((await post('/api/rpc/echo', 1, 'not-a-token')).statusCode).toBe(401);
  });

  it('refuses a user rpc without a token with 401, and an unknown name with 404 before any auth', async () => {
    const anonymous = await post('/api/rpc/whoami');
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().code).toBe('UNAUTHENTICATED');
    for (const name of ['nope', 'match.result', 'Bad%20Name']) {
      const unknown = await post(`/api/rpc/${name}`);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().code).toBe('NOT_FOUND');
    }
    expect((await post('/internal/rpc/whoami')).statusCode).toBe(404);
    const frame = await request(socket, 'rpc', { name: 'match.result' });
    expect(frame).toMatchObject({ t: 'error', code: 'NOT_FOUND' });
  });

  it('refuses the rpc frame before auth with UNAUTHENTICATED', async () => {
    const anonymous = await sockets.open();
    expect(await request(anonymous, 'rpc', { name: 'echo' })).toMatchObject({
      t: 'error',
      code: 'UNAUTHENTICATED',
    });
  });

  it("validates the input against the rpc's schema: 422 naming body.<field> or d.input.<field>", async () => {
    const rest = await post('/api/rpc/double', { count: 0 }, alice.access_token);
    expect(rest.statusCode).toBe(422);
    expect(rest.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'body.count' }] });
    const frame = await request(socket, 'rpc', { name: 'double', input: { count: 'x' } });
    expect(frame).toMatchObject({
      t: 'error',
      code: 'VALIDATION_FAILED',
      errors: [{ path: 'd.input.count' }],
    });
    expect((await post('/api/rpc/double', { count: 21 }, alice.access_token)).json()).toEqual({ result: 42 });
    expect((await request(socket, 'rpc', { name: 'double', input: { count: 2 } })).d).toEqual({ result: 4 });
  });

  it('answers a thrown refusal with its status, code and detail on both transports', async () => {
    const rest = await post('/api/rpc/refuse', undefined, alice.access_token);
    expect(rest.statusCode).toBe(403);
    expect(rest.json()).toMatchObject({ code: 'NOT_IN_SEASON', detail: 'Come back in spring.' });
    const frame = await request(socket, 'rpc', { name: 'refuse' });
    expect(frame).toMatchObject({ t: 'error', code: 'NOT_IN_SEASON', message: 'Come back in spring.' });
  });

  it.each(['boom', 'bigint', 'cycle', 'bad-refuse'])(
    'answers the failure of rpc %s with 500 EXTENSION_ERROR naming none of it, and keeps serving',
    async (name) => {
      const rest = await post(`/api/rpc/${name}`, undefined, alice.access_token);
      expect(rest.statusCode).toBe(500);
      expect(rest.json().code).toBe('EXTENSION_ERROR');
      expect(rest.body).not.toMatch(/secret|TypeError|at /);
      const frame = await request(socket, 'rpc', { name });
      expect(frame).toMatchObject({ t: 'error', code: 'EXTENSION_ERROR' });
      expect((await post('/api/rpc/echo', 1)).statusCode).toBe(200);
    },
  );

  it('answers 503 EXTENSION_TIMEOUT at the deadline, serves the same socket meanwhile, and lets nothing be written after it', async () => {
    socket.sendFrame({ t: 'rpc', id: 7, d: { name: 'slow' } });
    expect((await request(socket, 'rpc', { name: 'echo', input: 'meanwhile' })).t).toBe('ack');
    expect(await socket.next((frame) => frame.id === 7)).toMatchObject({
      t: 'error',
      code: 'EXTENSION_TIMEOUT',
    });
    const rest = await post('/api/rpc/slow', undefined, alice.access_token);
    expect(rest.statusCode).toBe(503);
    expect(rest.json().code).toBe('EXTENSION_TIMEOUT');
    await vi.waitFor(() => expect(seen().late).toEqual(['EXTENSION_TIMEOUT', 'EXTENSION_TIMEOUT']));
  });

  it('logs a promise an extension left rejected and keeps serving', async () => {
    expect((await post('/api/rpc/stray', undefined, alice.access_token)).json()).toEqual({
      result: 'answered',
    });
    expect((await post('/api/rpc/echo', 2)).statusCode).toBe(200);
  });

  it("gives ctx.users.get an account's public fields, and null for any string that names none", async () => {
    const found = await post('/api/rpc/user', alice.user.id, alice.access_token);
    expect(found.json().result).toEqual({
      id: alice.user.id,
      username: alice.user.username,
      created_at: expect.any(String),
      roles: ['user'],
    });
    for (const id of ['not-an-id', '00000000-0000-7000-8000-000000000000', 17]) {
      expect((await post('/api/rpc/user', id, alice.access_token)).json()).toEqual({ result: null });
    }
  });

  it("serves a server rpc only under /internal/rpc with a game server's token, with ctx.server set", async () => {
    const { worldId } = await createWorld(app(), alice.access_token);
    await gameServerCalls(app).spawn(alice, worldId);
    const token = await vi.waitFor(
      () => {
        const launched = launchesOf(servers.dir, worldId)[0]?.['server-token'];
        expect(launched).toBeDefined();
        return launched as string;
      },
      { timeout: 15_000, interval: 50 },
    );
    const answer = await post('/internal/rpc/match.result', { winner: alice.user.id }, token);
    expect(answer.statusCode).toBe(200);
    expect(answer.json().result).toEqual({
      server: { server_id: expect.any(String), world_id: worldId },
      input: { winner: alice.user.id },
      caller: null,
    });
    expect((await post('/internal/rpc/match.result', {}, alice.access_token)).statusCode).toBe(401);
    expect((await post('/internal/rpc/match.result', {})).statusCode).toBe(401);
    expect((await post('/api/rpc/match.result', {}, token)).statusCode).toBe(404);
  });

  it('documents each rpc as its own operation, with its input schema, under its path', async () => {
    const document = (await app().http.inject({ method: 'GET', url: '/openapi.json' })).json();
    const double = document.paths['/api/rpc/double'].post;
    expect(double).toMatchObject({ operationId: 'rpc.double', tags: ['rpc'] });
    expect(JSON.stringify(double.requestBody)).toContain('count');
    expect(Object.keys(double.responses)).toEqual(
      expect.arrayContaining(['200', '401', '404', '422', '4XX', '500', '503']),
    );
    expect(document.paths['/internal/rpc/match.result'].post.operationId).toBe('rpc.match.result');
    expect(document.paths['/api/rpc/match.result']).toBeUndefined();
  });

  it('counts each call in /metrics by extension, kind, name and outcome', async () => {
    const metrics = (await app().http.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(
      /atrium_extension_calls_total\{extension="kit",kind="rpc",name="refuse",outcome="refused"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /atrium_extension_calls_total\{extension="kit",kind="rpc",name="slow",outcome="timeout"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /atrium_extension_calls_total\{extension="kit",kind="rpc",name="boom",outcome="error"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /atrium_extension_duration_seconds_count\{extension="kit",kind="rpc",name="echo"\} [1-9]/,
    );
  });
});
