import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../helpers/app.js';
import { TestSocket } from '../helpers/ws-client.js';

interface Registered {
  user: { id: string; username: string };
  access_token: string;
  refresh_token: string;
}

function flipSignatureBit(token: string): string {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const bytes = Buffer.from(signature, 'base64url');
  const index = Math.floor(bytes.length / 2);
  bytes[index] = (bytes[index] as number) ^ 0x01;
  return `${header}.${payload}.${bytes.toString('base64url')}`;
}

describe('gateway auth frame', () => {
  const app = useTestApp();
  let registered: Registered;
  const sockets: TestSocket[] = [];
  let nextId = 100;

  const register = async (): Promise<Registered> => {
    const response = await app().http.inject({
      method: 'POST',
      url: '/api/auth/register',
      payload: {
        username: `g_${randomBytes(6).toString('hex')}`,
        password: 'correct horse battery',
        accept_terms: true,
        confirm_18_plus: true,
      },
    });
    expect(response.statusCode).toBe(201);
    return response.json<Registered>();
  };

  const connect = async () => {
    const socket = await TestSocket.connect(app().wsUrl);
    sockets.push(socket);
    return socket;
  };

  /** Sends a frame with a fresh request id and returns the ack or error answering it. */
  const request = async (socket: TestSocket, frame: Record<string, unknown>) => {
    const id = nextId++;
    socket.sendFrame({ ...frame, id });
    const answer = await socket.next((f) => (f.t === 'ack' || f.t === 'error') && f.id === id);
    return { id, answer };
  };

  const expectStillAlive = async (socket: TestSocket) => {
    const id = nextId++;
    socket.sendFrame({ t: 'ping', id });
    const pong = await socket.next((f) => f.t === 'pong' && f.id === id);
    expect(typeof pong.ts).toBe('number');
  };

  beforeAll(async () => {
    registered = await register();
  });

  afterAll(async () => {
    for (const socket of sockets) socket.close();
  });

  it('acks an auth frame carrying a valid access token with the user id and roles', async () => {
    const socket = await connect();
    socket.sendFrame({ t: 'auth', id: 1, d: { token: registered.access_token } });
    const ack = await socket.next((f) => f.id === 1);
    expect(ack).toEqual({
      t: 'ack',
      id: 1,
      d: {
        user_id: registered.user.id,
        roles: ['user'],
        position: { offset: expect.any(Number), epoch: expect.any(String) },
      },
    });
  });

  it('refuses a token with a flipped signature bit with UNAUTHENTICATED and keeps the connection open', async () => {
    const socket = await connect();
    const forged = flipSignatureBit(registered.access_token);
    const { id, answer } = await request(socket, { t: 'auth', d: { token: forged } });
    expect(answer).toMatchObject({ t: 'error', id, code: 'UNAUTHENTICATED' });
    expect(JSON.stringify(answer)).not.toContain(forged);
    await expectStillAlive(socket);
  });

  it('lets a connection authenticate after a refused attempt', async () => {
    const socket = await connect();
    const refused = await request(socket, {
      t: 'auth',
      d: { token: flipSignatureBit(registered.access_token) },
    });
    expect(refused.answer.code).toBe('UNAUTHENTICATED');
    const { id, answer } = await request(socket, { t: 'auth', d: { token: registered.access_token } });
    expect(answer).toMatchObject({ t: 'ack', id, d: { user_id: registered.user.id, roles: ['user'] } });
  });

  it.each([
    ['d is missing', (): Record<string, unknown> => ({})],
    ['the token is a number', () => ({ d: { token: 5 } })],
    ['the token is empty', () => ({ d: { token: '' } })],
    ['d has an unknown extra field', () => ({ d: { token: registered.access_token, admin: true } })],
  ])('answers VALIDATION_FAILED when %s, and keeps the connection', async (_case, extra) => {
    const socket = await connect();
    const { id, answer } = await request(socket, { t: 'auth', ...extra() });
    expect(answer).toMatchObject({ t: 'error', id, code: 'VALIDATION_FAILED' });
    expect(Array.isArray(answer.errors)).toBe(true);
    expect((answer.errors as unknown[]).length).toBeGreaterThan(0);
    await expectStillAlive(socket);
  });

  it('refuses the access token of a logged-out session with UNAUTHENTICATED', async () => {
    const session = await register();
    const socket = await connect();
    const before = await request(socket, { t: 'auth', d: { token: session.access_token } });
    expect(before.answer).toMatchObject({ t: 'ack', d: { user_id: session.user.id } });

    const logout = await app().http.inject({
      method: 'POST',
      url: '/api/auth/logout',
      payload: { refresh_token: session.refresh_token },
    });
    expect(logout.statusCode).toBe(204);

    const fresh = await connect();
    const { id, answer } = await request(fresh, { t: 'auth', d: { token: session.access_token } });
    expect(answer).toMatchObject({ t: 'error', id, code: 'UNAUTHENTICATED' });
    await expectStillAlive(fresh);
  });
});
