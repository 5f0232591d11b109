import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { openedSockets, request, type TestSocket } from '../helpers/ws-client.js';

const KIT = fileURLToPath(new URL('./fixtures/kit.mjs', import.meta.url));
interface Seen {
  before: { op: string; input: unknown; caller?: unknown }[];
  after: { op: string; input: unknown; result?: unknown }[];
}
const seen = () => (globalThis as unknown as { kitSeen: Seen }).kitSeen;
const beforeOf = (op: string) => seen().before.filter((entry) => entry.op === op);
const afterOf = (op: string) => seen().after.filter((entry) => entry.op === op);

/** Before and after hooks (docs/extensions.md, "Hooks") on both transports. */
describe('extension hooks', () => {
  const app = useTestApp({ EXTENSIONS: KIT, EXTENSION_TIMEOUT_MS: 300 });
  const sockets = openedSockets(() => app().wsUrl);
  let alice: TokenResponse;
  let socket: TestSocket;
  beforeAll(async () => {
    alice = await registerUser(app());
    socket = await sockets.open(alice.access_token);
  });
  afterAll(() => sockets.closeAll());

  const putProfile = (bio: string) =>
    app().http.inject({
      method: 'PUT',
      url: '/api/profile/me',
      headers: bearer(alice.access_token),
      payload: { bio },
    });
  const storedBio = async () =>
    (
      await queryRows<{ bio: string }>(app().db, 'select bio from profiles where user_id = ?', [
        alice.user.id,
      ])
    )[0]?.bio;

  it('runs a before hook on a read with the caller and an undefined input', async () => {
    const me = await app().http.inject({
      method: 'GET',
      url: '/api/users/me',
      headers: bearer(alice.access_token),
    });
    expect(me.statusCode).toBe(200);
    expect(beforeOf('users.me').at(-1)).toEqual({
      op: 'users.me',
      input: undefined,
      caller: { user_id: alice.user.id, username: alice.user.username, roles: ['user'] },
    });
  });

  it('runs the operation with the replacement a before hook returns, validated again', async () => {
    expect((await putProfile('shout')).json().bio).toBe('SHOUT');
    expect(await storedBio()).toBe('SHOUT');
  });

  it('ignores what a before hook changes in place instead of returning it', async () => {
    expect((await putProfile('mutate')).json().bio).toBe('mutate');
  });

  it('answers a refusal from a before hook with its status and code and writes nothing, on both transports', async () => {
    await putProfile('kept');
    const rest = await putProfile('forbidden');
    expect(rest.statusCode).toBe(422);
    expect(rest.json()).toMatchObject({ code: 'BIO_REFUSED', detail: 'That bio is not allowed here.' });
    expect(await storedBio()).toBe('kept');
    const [a, b] = [await registerUser(app()), await registerUser(app())];
    const frame = await request(socket, 'presence.subscribe', { user_ids: [a.user.id, b.user.id] });
    expect(frame).toMatchObject({ t: 'error', code: 'TOO_FEW', message: 'Subscribe to one or to three.' });
    const one = await request(socket, 'presence.subscribe', { user_ids: [a.user.id] });
    expect(one.t).toBe('ack');
    expect(beforeOf('presence.subscribe').at(-1)?.input).toEqual({ user_ids: [a.user.id] });
  });

  it.each([
    ['a replacement its schema refuses', 'bad replacement'],
    ['a throw', 'throw'],
  ])('answers %s with 500 EXTENSION_ERROR and writes nothing', async (_what, bio) => {
    await putProfile('before the failure');
    const failed = await putProfile(bio);
    expect(failed.statusCode).toBe(500);
    expect(failed.json().code).toBe('EXTENSION_ERROR');
    expect(failed.body).not.toContain('secret');
    expect(await storedBio()).toBe('before the failure');
  });

  it('answers 503 EXTENSION_TIMEOUT when a before hook passes its deadline, and the operation does not run', async () => {
    const bob = await registerUser(app());
    const sent = await app().http.inject({
      method: 'POST',
      url: `/api/chat/dm/${bob.user.id}/messages`,
      headers: bearer(alice.access_token),
      payload: { body: 'slow hook' },
    });
    expect(sent.statusCode).toBe(503);
    expect(sent.json().code).toBe('EXTENSION_TIMEOUT');
    const frame = await request(socket, 'dm.send', { user_id: bob.user.id, body: 'slow hook' });
    expect(frame).toMatchObject({ t: 'error', code: 'EXTENSION_TIMEOUT' });
    const stored = await queryRows(app().db, 'select 1 from messages where sender_id = ? and body = ?', [
      alice.user.id,
      'slow hook',
    ]);
    expect(stored).toEqual([]);
  });

  it('runs every after hook with the input and the answer, after the answer, which they cannot change', async () => {
    const answer = await putProfile('after throws');
    expect(answer.statusCode).toBe(200);
    expect(answer.json().bio).toBe('after throws');
    await vi.waitFor(() => {
      expect(afterOf('profile.update#2').at(-1)?.input).toEqual({ bio: 'after throws' });
      expect(afterOf('profile.update').at(-1)).toMatchObject({
        input: { bio: 'after throws' },
        result: { bio: 'after throws' },
      });
    });
  });

  it('runs no after hook for a refused call', async () => {
    const count = afterOf('profile.update').length;
    await putProfile('forbidden');
    await putProfile('last');
    await vi.waitFor(() => expect(afterOf('profile.update').at(-1)?.input).toEqual({ bio: 'last' }));
    expect(afterOf('profile.update').length).toBe(count + 1);
  });

  it('runs hooks on an Idempotency-Key write once, and no after hook for its replay', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const key = randomUUID();
    const grant = () =>
      app().http.inject({
        method: 'POST',
        url: '/api/economy/admin/grants',
        headers: { ...bearer(admin.access_token), 'idempotency-key': key },
        payload: { user_id: alice.user.id, amount: 5, reason: 'hooked' },
      });
    const first = await grant();
    expect(first.statusCode).toBe(201);
    expect(beforeOf('economy.admin.grant').at(-1)?.input).toMatchObject({ idempotency_key: key, amount: 5 });
    await vi.waitFor(() => expect(afterOf('economy.admin.grant').at(-1)?.result).toEqual(first.json()));
    const afterCount = afterOf('economy.admin.grant').length;
    const replay = await grant();
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    await putProfile('a later call');
    await vi.waitFor(() => expect(afterOf('profile.update').at(-1)?.input).toEqual({ bio: 'a later call' }));
    expect(afterOf('economy.admin.grant').length).toBe(afterCount);
  });

  it("runs no hook for what a ctx service does (ctx.economy.grant is not the admin grant's operation)", async () => {
    const before = beforeOf('economy.admin.grant').length;
    const granted = await app().http.inject({
      method: 'POST',
      url: '/api/rpc/grant',
      headers: { ...bearer(alice.access_token), 'content-type': 'application/json' },
      payload: JSON.stringify(alice.user.id),
    });
    expect(granted.json().result).toMatchObject({ user_id: alice.user.id, amount: 3, replayed: false });
    await putProfile('after the grant');
    await vi.waitFor(() =>
      expect(afterOf('profile.update').at(-1)?.input).toEqual({ bio: 'after the grant' }),
    );
    expect(beforeOf('economy.admin.grant').length).toBe(before);
  });

  it('counts hook calls in /metrics', async () => {
    const metrics = (await app().http.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(
      /atrium_extension_calls_total\{extension="kit",kind="before",name="profile.update",outcome="refused"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /atrium_extension_calls_total\{extension="kit",kind="after",name="profile.update",outcome="error"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /atrium_extension_calls_total\{extension="kit",kind="before",name="dm.send",outcome="timeout"\} [1-9]/,
    );
  });
});
