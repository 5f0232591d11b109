import { afterEach, describe, expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets, request } from '../helpers/ws-client.js';
import { dmCalls } from './dm.js';
import { worldChatCalls } from './world-chat.js';

describe('the per-sender rate limit of world and room chat', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 2, DM_RATE_LIMIT_WINDOW_SECONDS: 60 });
  const { send, sent, rowsOf } = worldChatCalls(app);
  const dm = dmCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());
  const directBodiesOf = async (senderId: string) =>
    (
      await queryRows<{ body: string }>(
        app().db,
        'select body from messages where sender_id = ? and conversation_id is not null order by created_at, id',
        [senderId],
      )
    ).map((m) => m.body);

  it('answers 429 RATE_LIMITED with Retry-After past the limit over world and room chats together, and writes nothing', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const { worldId, mainRoomId } = await createWorld(app(), alice.access_token, { visibility: 'public' });
    await sent(alice, { worldId }, 'one');
    await sent(alice, { worldId, roomId: mainRoomId }, 'two');
    const limited = await send(alice, { worldId }, 'three');
    expect(limited.statusCode).toBe(429);
    expect(limited.json().code).toBe('RATE_LIMITED');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // The limit comes before the world is looked up.
    const unknown = await send(alice, { worldId: '0190a000-0000-7000-8000-00000000dead' }, 'four');
    expect(unknown.statusCode).toBe(429);
    const socket = await sockets.open(alice.access_token);
    expect(await request(socket, 'chat.send', { world_id: worldId, body: 'five' })).toMatchObject({
      t: 'error',
      code: 'RATE_LIMITED',
      retry_after: expect.any(Number),
    });
    expect((await rowsOf(worldId)).map((m) => m.body)).toEqual(['one', 'two']);
    // Other senders have limits of their own.
    await sent(bob, { worldId }, 'bob still may');
  });

  it('counts direct messages and world chat against one limit per sender, in both orders, and writes nothing past it', async () => {
    const [alice, bob, carol] = [
      await registerUser(app()),
      await registerUser(app()),
      await registerUser(app()),
    ];
    const { worldId } = await createWorld(app(), alice.access_token, { visibility: 'public' });
    await dm.sent(alice, bob, 'a direct message');
    await sent(alice, { worldId }, 'a world message');
    const directRefused = await dm.send(alice, bob.user.id, 'one direct message too many');
    expect(directRefused.statusCode).toBe(429);
    expect(directRefused.json().code).toBe('RATE_LIMITED');
    expect(Number(directRefused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const worldRefused = await send(alice, { worldId }, 'one world message too many');
    expect(worldRefused.statusCode).toBe(429);
    expect((await rowsOf(worldId)).map((m) => m.body)).toEqual(['a world message']);
    expect(await directBodiesOf(alice.user.id)).toEqual(['a direct message']);

    await sent(carol, { worldId }, 'world first');
    await sent(carol, { worldId }, 'world second');
    expect((await dm.send(carol, bob.user.id, 'a direct message past the shared limit')).statusCode).toBe(
      429,
    );
    expect(await directBodiesOf(carol.user.id)).toEqual([]);
  });
});

describe('world chat with the text filter in reject mode', () => {
  const app = useTestApp({
    DM_FILTER_MODE: 'reject',
    DM_RATE_LIMIT_COUNT: 2,
    DM_RATE_LIMIT_WINDOW_SECONDS: 60,
  });
  const { send, sent, rowsOf } = worldChatCalls(app);

  it('refuses a message with disallowed words with 422 MESSAGE_REJECTED, writes nothing and does not count it against the limit', async () => {
    const alice = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), alice.access_token);
    for (const chat of [{ worldId }, { worldId, roomId: mainRoomId }, { worldId }]) {
      const refused = await send(alice, chat, 'what the fuck');
      expect(refused.statusCode).toBe(422);
      expect(refused.json()).toMatchObject({ code: 'MESSAGE_REJECTED', errors: [{ path: 'body' }] });
    }
    expect(await rowsOf(worldId)).toEqual([]);
    await sent(alice, { worldId }, 'what the heck');
    await sent(alice, { worldId, roomId: mainRoomId }, 'still fine');
  });
});
