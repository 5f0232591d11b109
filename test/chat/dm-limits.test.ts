import { describe, expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { dmCalls } from './dm.js';

describe('the per-sender rate limit of direct messages', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 2, DM_RATE_LIMIT_WINDOW_SECONDS: 60 });
  const { send, sent, rowsOf } = dmCalls(app);

  it('answers 429 RATE_LIMITED with Retry-After past the limit, writes nothing, and leaves other senders alone', async () => {
    const [alice, bob, carol] = [
      await registerUser(app()),
      await registerUser(app()),
      await registerUser(app()),
    ];
    await sent(alice, bob, 'one');
    await sent(alice, carol, 'two');
    const limited = await send(alice, bob.user.id, 'three');
    expect(limited.statusCode).toBe(429);
    expect(limited.json().code).toBe('RATE_LIMITED');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await rowsOf(alice.user.id)).messages.map((m) => m.body)).toEqual(['one', 'two']);
    await sent(bob, alice, 'bob still may');
  });
});

describe('the text filter in reject mode', () => {
  const app = useTestApp({ DM_FILTER_MODE: 'reject' });
  const { send, sent, rowsOf } = dmCalls(app);

  it('refuses a message with disallowed words with 422 MESSAGE_REJECTED and writes nothing', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    const refused = await send(alice, bob.user.id, 'what the fuck');
    expect(refused.statusCode).toBe(422);
    expect(refused.json()).toMatchObject({ code: 'MESSAGE_REJECTED', errors: [{ path: 'body' }] });
    expect(await rowsOf(alice.user.id)).toEqual({ messages: [], conversations: [] });
    expect(await sent(alice, bob, 'what the heck')).toMatchObject({ body: 'what the heck', filtered: false });
  });
});
