import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TokenResponse } from '../../protocol/auth.js';
import { AtriumClient, type AtriumClientOptions, type FetchLike } from '../../protocol/client.js';
import { AtriumSocket } from '../../protocol/socket.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { rejectionOf } from '../helpers/rejections.js';

const KIT = fileURLToPath(new URL('../extensions/fixtures/kit.mjs', import.meta.url));

/** The global fetch, recording each request's method, URL and body, so a test sees what went over REST. */
function recordingFetch() {
  const requests: { method: string; url: string; body: string | undefined; type: string | undefined }[] = [];
  const fetch: FetchLike = (url, init) => {
    requests.push({ method: init.method, url, body: init.body, type: init.headers['content-type'] });
    return globalThis.fetch(url, init);
  };
  return { fetch, requests };
}

/** `rpc(name, input)` of the typed client against a real app that loads test/extensions/fixtures/kit.mjs. */
describe('AtriumClient rpc against a server with an extension', () => {
  const app = useTestApp({ EXTENSIONS: KIT });
  const clients: AtriumClient[] = [];
  let alice: TokenResponse;

  const client = (options: Partial<AtriumClientOptions> = {}) => {
    const created = new AtriumClient({ httpUrl: app().httpUrl, wsUrl: app().wsUrl, WebSocket, ...options });
    clients.push(created);
    return created;
  };
  /** A client whose calls go over the ready socket, and one without a socket, for the same user. */
  const pair = async () => {
    const overSocket = recordingFetch();
    const overRest = recordingFetch();
    const socketClient = client({ accessToken: alice.access_token, fetch: overSocket.fetch });
    const restClient = client({ accessToken: alice.access_token, fetch: overRest.fetch, wsUrl: undefined });
    await socketClient.ready();
    return { socketClient, restClient, overSocket, overRest };
  };

  beforeAll(async () => {
    alice = await registerUser(app());
  });
  afterAll(() => {
    for (const created of clients) created.close();
  });

  it('answers an rpc with the same result over the socket and over REST', async () => {
    const { socketClient, restClient, overSocket, overRest } = await pair();
    const caller = { user_id: alice.user.id, username: alice.user.username, roles: ['user'] };
    for (const via of [socketClient, restClient]) {
      const doubled: number = await via.rpc<number>('double', { count: 21 });
      expect(doubled).toBe(42);
      expect(await via.rpc('echo', { a: [1, 'two'] })).toEqual({ input: { a: [1, 'two'] }, caller });
      expect(await via.rpc('nothing')).toBe(null);
    }
    expect(overSocket.requests).toEqual([]);
    expect(overRest.requests.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `POST ${app().httpUrl}/api/rpc/double`,
      `POST ${app().httpUrl}/api/rpc/echo`,
      `POST ${app().httpUrl}/api/rpc/nothing`,
    ]);
  });

  it('sends the input as the JSON body, no body without input, and the name as one path segment', async () => {
    const { restClient, overRest } = await pair();
    await restClient.rpc('double', { count: 2 });
    await restClient.rpc('nothing');
    expect((await rejectionOf(restClient.rpc('../users/me?x=1'))).code).toBe('NOT_FOUND');
    expect(overRest.requests).toEqual([
      {
        method: 'POST',
        url: `${app().httpUrl}/api/rpc/double`,
        body: '{"count":2}',
        type: 'application/json',
      },
      { method: 'POST', url: `${app().httpUrl}/api/rpc/nothing`, body: undefined, type: undefined },
      {
        method: 'POST',
        url: `${app().httpUrl}/api/rpc/..%2Fusers%2Fme%3Fx%3D1`,
        body: undefined,
        type: undefined,
      },
    ]);
  });

  it('refuses with the same codes over both transports, an extension’s own code as it gave it', async () => {
    const { socketClient, restClient } = await pair();
    const refusals = async (caller: AtriumClient) => ({
      refused: await rejectionOf(caller.rpc('refuse')),
      invalid: await rejectionOf(caller.rpc('double', { count: 0 })),
      unknown: await rejectionOf(caller.rpc('nope')),
      serverOnly: await rejectionOf(caller.rpc('match.result', {})),
      failed: await rejectionOf(caller.rpc('boom')),
    });
    const [viaSocket, viaRest] = [await refusals(socketClient), await refusals(restClient)];
    for (const errors of [viaSocket, viaRest]) {
      expect(errors.refused).toMatchObject({ code: 'NOT_IN_SEASON', message: 'Come back in spring.' });
      expect(errors.invalid.code).toBe('VALIDATION_FAILED');
      expect(errors.unknown.code).toBe('NOT_FOUND');
      expect(errors.serverOnly.code).toBe('NOT_FOUND');
      expect(errors.failed.code).toBe('EXTENSION_ERROR');
      expect(errors.failed.message).not.toContain('secret');
    }
    // The field is named where it travelled, as for every operation.
    expect(viaSocket.invalid.errors).toEqual([expect.objectContaining({ path: 'd.input.count' })]);
    expect(viaRest.invalid.errors).toEqual([expect.objectContaining({ path: 'body.count' })]);
  });

  it('calls a public rpc without a token over REST, with no caller, and refuses a user rpc UNAUTHENTICATED', async () => {
    const anonymous = client();
    expect(anonymous.state).toBe('offline');
    expect(await anonymous.rpc('echo', 'hi')).toEqual({ input: 'hi', caller: null });
    expect((await rejectionOf(anonymous.rpc('whoami'))).code).toBe('UNAUTHENTICATED');
  });

  it('calls an rpc through AtriumSocket, resolving with its result', async () => {
    const socket = await AtriumSocket.connect(app().wsUrl, { WebSocket });
    try {
      await socket.auth(alice.access_token);
      expect(await socket.rpc<number>('double', { count: 5 })).toBe(10);
      expect(await socket.rpc('nothing')).toBe(null);
      expect((await rejectionOf(socket.rpc('refuse'))).code).toBe('NOT_IN_SEASON');
    } finally {
      socket.close();
    }
  });
});

describe('AtriumClient rpc over REST (stubbed fetch)', () => {
  it('fails with BAD_RESPONSE when a success carries no result', async () => {
    const fetch: FetchLike = async () => ({
      status: 200,
      headers: { get: () => null },
      json: async () => ({}),
    });
    const client = new AtriumClient({ httpUrl: 'http://api.test', fetch });
    expect((await rejectionOf(client.rpc('echo'))).code).toBe('BAD_RESPONSE');
  });
});
