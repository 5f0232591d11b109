import { describe, expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { moderationCalls } from './moderation.js';

describe('reporting a message', () => {
  const app = useTestApp();
  const { report, reported, directMessage, worldMessage, reportRowsBy } = moderationCalls(app);
  const user = () => registerUser(app());

  it('files an open report (201) on a direct message the recipient received, trimming reason and details', async () => {
    const [alice, bob] = [await user(), await user()];
    const messageId = await directMessage(alice, bob);
    const answer = await reported(bob, messageId, { reason: '  spam  ', details: '\n sells gold \t' });
    expect(answer).toEqual({
      id: expect.any(String),
      message_id: messageId,
      state: 'open',
      reason: 'spam',
      details: 'sells gold',
      created_at: expect.any(String),
    });
    expect(await reportRowsBy(bob)).toEqual([
      { message_id: messageId, state: 'open', reason: 'spam', details: 'sells gold' },
    ]);
  });

  it('stores no details when they are left out or only whitespace', async () => {
    const [alice, bob] = [await user(), await user()];
    const first = await directMessage(alice, bob, 'one');
    const second = await directMessage(alice, bob, 'two');
    expect((await reported(bob, first)).details).toBeNull();
    expect((await reported(bob, second, { reason: 'abuse', details: '   ' })).details).toBeNull();
    expect((await reportRowsBy(bob)).map((row) => row.details)).toEqual([null, null]);
  });

  it.each(['public', 'unlisted'])(
    'lets any signed-in user report a message of a %s world and of its rooms',
    async (visibility) => {
      const [owner, sender, reporter] = [await user(), await user(), await user()];
      const { worldId, mainRoomId } = await createWorld(app(), owner.access_token, { visibility });
      const inWorld = await worldMessage(sender, worldId);
      const inRoom = await worldMessage(sender, worldId, mainRoomId);
      await reported(reporter, inWorld);
      await reported(reporter, inRoom);
      expect((await reportRowsBy(reporter)).map((row) => row.message_id)).toEqual([inWorld, inRoom]);
    },
  );

  it("lets a private world's owner report a message written in it", async () => {
    const [owner, sender] = [await user(), await user()];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'private' });
    const messageId = await worldMessage(sender, worldId);
    expect((await reported(owner, messageId)).message_id).toBe(messageId);
  });

  it('accepts a message id spelled in upper case, storing the canonical id', async () => {
    const [alice, bob] = [await user(), await user()];
    const messageId = await directMessage(alice, bob);
    expect((await reported(bob, messageId.toUpperCase())).message_id).toBe(messageId);
  });

  it.each([
    ['an unknown id', async () => '0190a000-0000-7000-8000-00000000dead'],
    ['an id that cannot name a message', async () => 'not-a-message'],
    ["another pair's direct message", async () => directMessage(await user(), await user())],
    [
      "a message of someone else's private world",
      async () => {
        const owner = await user();
        const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'private' });
        return worldMessage(owner, worldId);
      },
    ],
  ])('answers 404 NOT_FOUND for %s and writes nothing', async (_case, messageOf) => {
    const [messageId, reporter] = [await messageOf(), await user()];
    const response = await report(reporter, messageId);
    expect([response.statusCode, response.json().code]).toEqual([404, 'NOT_FOUND']);
    expect(await reportRowsBy(reporter)).toEqual([]);
  });

  it('refuses a report of your own message with 422 and writes nothing', async () => {
    const [alice, bob, owner] = [await user(), await user(), await user()];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    for (const messageId of [await directMessage(alice, bob), await worldMessage(alice, worldId)]) {
      const response = await report(alice, messageId);
      expect(response.statusCode).toBe(422);
      expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: 'message_id' }] });
    }
    expect(await reportRowsBy(alice)).toEqual([]);
  });

  it('refuses a second report of the same message by the same user with 409 CONFLICT, keeping the first', async () => {
    const [alice, bob] = [await user(), await user()];
    const messageId = await directMessage(alice, bob);
    await reported(bob, messageId, { reason: 'first' });
    const again = await report(bob, messageId, { reason: 'second' });
    expect([again.statusCode, again.json().code]).toEqual([409, 'CONFLICT']);
    expect((await reportRowsBy(bob)).map((row) => row.reason)).toEqual(['first']);
  });

  it('stores one report when the same user sends two at once; the other answers 409', async () => {
    const [alice, bob] = [await user(), await user()];
    const messageId = await directMessage(alice, bob);
    const answers = await Promise.all([report(bob, messageId), report(bob, messageId)]);
    expect(answers.map((response) => response.statusCode).sort()).toEqual([201, 409]);
    expect(await reportRowsBy(bob)).toHaveLength(1);
  });

  it('lets two users each report the same message', async () => {
    const [owner, sender, first, second] = [await user(), await user(), await user(), await user()];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const messageId = await worldMessage(sender, worldId);
    await reported(first, messageId);
    await reported(second, messageId);
    for (const reporter of [first, second])
      expect((await reportRowsBy(reporter)).map((row) => row.message_id)).toEqual([messageId]);
  });

  it.each([
    ['a reason empty after trimming', { reason: ' \n\t ' }, 'reason'],
    ['a reason over 200 characters after trimming', { reason: ` ${'é'.repeat(201)} ` }, 'reason'],
    ['details over 2000 characters after trimming', { reason: 'spam', details: 'x'.repeat(2001) }, 'details'],
    // The text rule of the request schema, which names the field by where it came from.
    ['a reason holding U+0000', { reason: 'a\u0000b' }, 'body.reason'],
    ['details holding a lone surrogate', { reason: 'spam', details: 'a\uDC00b' }, 'body.details'],
    ['a missing reason', {}, 'body.reason'],
  ])('refuses %s with 422 VALIDATION_FAILED and writes nothing', async (_case, payload, path) => {
    const [alice, bob] = [await user(), await user()];
    const messageId = await directMessage(alice, bob);
    const response = await report(bob, messageId, payload);
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [expect.objectContaining({ path })],
    });
    expect(await reportRowsBy(bob)).toEqual([]);
  });

  it('keeps a reason of exactly 200 characters (an emoji counts once)', async () => {
    const [alice, bob] = [await user(), await user()];
    const reason = '😀'.repeat(200);
    expect((await reported(bob, await directMessage(alice, bob), { reason })).reason).toBe(reason);
  });
});
