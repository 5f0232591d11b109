import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';

/** What the social graph notifies, written with its cause (docs/notifications.md). */
describe('social notifications', () => {
  const app = useTestApp();
  const call = async (method: 'GET' | 'POST', url: string, user: TokenResponse) => {
    const response = await app().http.inject({ method, url, headers: bearer(user.access_token) });
    return { status: response.statusCode, body: response.body ? response.json() : null };
  };
  const inbox = async (user: TokenResponse) =>
    (await call('GET', '/api/notifications', user)).body.items as {
      code: string;
      sender_id: string | null;
      content: unknown;
    }[];

  it('notifies the addressee of a new request, and the requester when it is accepted', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const sent = await app().http.inject({
      method: 'POST',
      url: '/api/friends/requests',
      headers: bearer(alice.access_token),
      payload: { user_id: bob.user.id },
    });
    expect(sent.statusCode).toBe(201);
    expect(await inbox(bob)).toEqual([
      expect.objectContaining({
        code: 'friend_request.received',
        sender_id: alice.user.id,
        content: { user: { id: alice.user.id, username: alice.user.username } },
      }),
    ]);
    expect(await inbox(alice)).toEqual([]);
    expect((await call('POST', `/api/friends/requests/${alice.user.id}/accept`, bob)).status).toBe(200);
    expect(await inbox(alice)).toEqual([
      expect.objectContaining({
        code: 'friend_request.accepted',
        sender_id: bob.user.id,
        content: { user: { id: bob.user.id, username: bob.user.username } },
      }),
    ]);
  });

  it('tells the first requester of an acceptance by a request back, with no request notification', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const ask = (from: TokenResponse, to: TokenResponse) =>
      app().http.inject({
        method: 'POST',
        url: '/api/friends/requests',
        headers: bearer(from.access_token),
        payload: { user_id: to.user.id },
      });
    await ask(alice, bob);
    await ask(bob, alice);
    expect((await inbox(alice)).map((note) => note.code)).toEqual(['friend_request.accepted']);
    expect((await inbox(bob)).map((note) => note.code)).toEqual(['friend_request.received']);
  });

  it('notifies nobody of a declined request, and nobody of a refused one', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    await app().http.inject({
      method: 'POST',
      url: '/api/friends/requests',
      headers: bearer(alice.access_token),
      payload: { user_id: bob.user.id },
    });
    expect((await call('POST', `/api/friends/requests/${alice.user.id}/decline`, bob)).status).toBe(204);
    expect(await inbox(alice)).toEqual([]);
    const again = await app().http.inject({
      method: 'POST',
      url: '/api/friends/requests',
      headers: bearer(alice.access_token),
      payload: { user_id: alice.user.id },
    });
    expect(again.statusCode).toBe(422);
    expect(await inbox(alice)).toEqual([]);
  });
});
