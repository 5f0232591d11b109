import { afterEach, describe, expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, request } from '../helpers/ws-client.js';
import { dmCalls } from './dm.js';

describe('direct message events', () => {
  const app = useTestApp();
  const sockets = openedSockets(() => app().wsUrl);
  const { expectStatus, rowsOf } = dmCalls(app);
  afterEach(() => sockets.closeAll());

  it("sends over the socket (dm.send) and delivers dm.message to the peer's socket and the sender's other socket", async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const [aliceSending, aliceElsewhere, bobSocket] = [
      await sockets.open(alice.access_token),
      await sockets.open(alice.access_token),
      await sockets.open(bob.access_token),
    ];
    const ack = await request(aliceSending, 'dm.send', { user_id: bob.user.id, body: ' over the socket ' });
    expect(ack.t).toBe('ack');
    const message = ack.d as { id: string; body: string };
    expect(message).toMatchObject({ sender_id: alice.user.id, body: 'over the socket', filtered: false });
    expect((await bobSocket.next((f) => f.t === 'dm.message')).d).toEqual(message);
    expect((await aliceElsewhere.next((f) => f.t === 'dm.message')).d).toEqual(message);
    expect((await rowsOf(alice.user.id)).messages).toEqual([{ body: 'over the socket', filtered: false }]);
  });

  it('answers a refused dm.send with an error frame of the REST code, and writes nothing', async () => {
    const alice = await registerUser(app());
    const socket = await sockets.open(alice.access_token);
    const error = await request(socket, 'dm.send', { user_id: alice.user.id, body: 'me' });
    expect(error).toMatchObject({ t: 'error', code: 'VALIDATION_FAILED' });
    expect(await rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
  });

  it('tells the peer with dm.read when the caller lists the history', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const sent = await expectStatus(201, 'POST', `/api/chat/dm/${bob.user.id}/messages`, alice, {
      body: 'read me',
    });
    const aliceSocket = await sockets.open(alice.access_token);
    await expectStatus(200, 'GET', `/api/chat/dm/${alice.user.id}/messages`, bob);
    const read = await aliceSocket.next((f) => f.t === 'dm.read');
    expect(read.d).toEqual({
      conversation_id: sent.json().conversation_id,
      user_id: bob.user.id,
      last_read_at: expect.any(String),
    });
  });
});
