import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { defineExtension } from '../../src/modules/extensions/define-extension.js';
import type { ExtensionNotification } from '../../src/modules/notifications/index.js';
import { auditEntriesOf } from '../audit/audit.js';
import { bearer, PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { openedSockets } from '../helpers/ws-client.js';

/** What a send resolved with, or the code and message of its rejection. */
const outcome = (sending: Promise<unknown>) =>
  sending.then(
    (value) => ({ value }),
    (error: { code?: string; message?: string }) => ({ code: error.code, message: error.message }),
  );

/**
 * The extension the tests call. This file is its module (EXTENSIONS names it), so its typed rpc
 * is checked against the extension API as an author's `defineExtension` is. The loader's import
 * gets the module vitest already evaluated: the tests are not collected twice.
 */
// biome-ignore lint/suspicious/noExportsInTest: the extension's default export, which EXTENSIONS loads from this file.
export default defineExtension({
  name: 'notifier',
  setup(api) {
    const { z } = api;
    api.rpc(
      'quest.completed',
      { input: z.object({ user_id: z.string(), quest: z.string() }) },
      (ctx, { user_id, quest }) =>
        ctx.notifications.send(user_id, {
          code: 'quest.completed',
          subject: `You completed ${quest}`,
          content: { quest },
        }),
    );
    // Passed on as given: the checks a plain JavaScript extension meets.
    api.rpc('send', {}, (ctx, input) => {
      const { user_id, notification } = input as { user_id: string; notification: ExtensionNotification };
      return outcome(ctx.notifications.send(user_id, notification));
    });
    api.rpc('send.bigint', { input: z.object({ user_id: z.string() }) }, (ctx, { user_id }) =>
      outcome(ctx.notifications.send(user_id, { code: 'a', subject: 'b', content: { n: 1n } })),
    );
  },
});

const EXTENSION = fileURLToPath(import.meta.url);
const CAP = 3;

/** Server extensions' ctx.notifications.send (docs/extensions.md, docs/notifications.md). */
describe('ctx.notifications', () => {
  const app = useTestApp({ EXTENSIONS: EXTENSION, NOTIFICATIONS_MAX_PER_USER: CAP });
  const sockets = openedSockets(() => app().wsUrl);
  afterAll(() => sockets.closeAll());
  let caller: TokenResponse;
  beforeAll(async () => {
    caller = await registerUser(app());
  });

  const rpc = async (name: string, input: unknown) => {
    const response = await app().http.inject({
      method: 'POST',
      url: `/api/rpc/${name}`,
      headers: bearer(caller.access_token),
      payload: input as object,
    });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().result;
  };
  const send = (user_id: unknown, notification: unknown) => rpc('send', { user_id, notification });
  const inbox = async (user: TokenResponse) => {
    const response = await app().http.inject({
      method: 'GET',
      url: '/api/notifications',
      headers: bearer(user.access_token),
    });
    return response.json().items as { subject: string }[];
  };
  const stored = async () =>
    (await queryRows<{ n: number }>(app().db, 'select count(*)::int as n from notifications', []))[0]?.n;
  const audited = async () =>
    (
      await queryRows<{ n: number }>(
        app().db,
        "select count(*)::int as n from audit_log where action = 'notifications.send'",
        [],
      )
    )[0]?.n;

  it('sends a user a notification from the system: answered, listed in their inbox and pushed live to their socket', async () => {
    const alice = await registerUser(app());
    const socket = await sockets.open(alice.access_token);
    const sent = await rpc('quest.completed', { user_id: alice.user.id, quest: 'the first quest' });
    expect(sent).toEqual({
      id: expect.any(String),
      code: 'quest.completed',
      subject: 'You completed the first quest',
      content: { quest: 'the first quest' },
      sender_id: null,
      created_at: expect.stringMatching(/Z$/),
      read_at: null,
    });
    expect(await inbox(alice)).toEqual([sent]);
    const live = await socket.next((frame) => frame.t === 'notification', 5_000);
    expect(live).toMatchObject({ t: 'notification', d: sent, pos: expect.anything() });
  });

  it('audits a send as an admin action with the extension as actor: one entry naming the recipient, without the content', async () => {
    const alice = await registerUser(app());
    const sent = await rpc('quest.completed', { user_id: alice.user.id, quest: 'the audited quest' });
    expect(await auditEntriesOf(app().db, alice.user.id)).toEqual([
      {
        actor_kind: 'extension',
        actor_id: 'notifier',
        action: 'notifications.send',
        target_type: 'user',
        target_id: alice.user.id,
        before: null,
        after: {
          notification_id: sent.id,
          code: 'quest.completed',
          subject: 'You completed the audited quest',
        },
      },
    ]);
  });

  it('stores {} as the content when none is given, and takes the user id in any spelling', async () => {
    const alice = await registerUser(app());
    const sent = await send(alice.user.id.toUpperCase(), { code: 'news', subject: 'Hello' });
    expect(sent.value).toMatchObject({ code: 'news', subject: 'Hello', content: {}, sender_id: null });
    expect(await inbox(alice)).toEqual([sent.value]);
  });

  it('rejects a bad code, subject or content with VALIDATION_FAILED naming the field, and writes nothing, audit entry included', async () => {
    const alice = await registerUser(app());
    const before = await stored();
    const auditedBefore = await audited();
    const good = { code: 'news.update', subject: 'Hello' };
    const refusals: [unknown, unknown, string][] = [
      [alice.user.id, { ...good, code: 'News.Update' }, 'notification.code'],
      [alice.user.id, { ...good, code: `a${'b'.repeat(64)}` }, 'notification.code'],
      [alice.user.id, { subject: 'Hello' }, 'notification.code'],
      [alice.user.id, { ...good, subject: '' }, 'notification.subject'],
      [alice.user.id, { ...good, subject: 'x'.repeat(201) }, 'notification.subject'],
      [alice.user.id, { ...good, subject: 'a\u0000b' }, 'notification.subject'],
      [alice.user.id, { ...good, content: [1, 2] }, 'notification.content'],
      [alice.user.id, { ...good, content: null }, 'notification.content'],
      [alice.user.id, { ...good, content: 'text' }, 'notification.content'],
      [alice.user.id, { ...good, content: { text: 'x'.repeat(4096) } }, 'notification.content'],
      [alice.user.id, { ...good, body: 'a key the notification does not have' }, 'notification'],
      [alice.user.id, 'Hello', 'notification'],
      [42, good, 'user_id'],
    ];
    for (const [userId, notification, field] of refusals) {
      const refused = await send(userId, notification);
      expect(refused.code, JSON.stringify(notification)).toBe('VALIDATION_FAILED');
      expect(refused.message).toContain(`${field}:`);
    }
    const unserializable = await rpc('send.bigint', { user_id: alice.user.id });
    expect(unserializable).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringContaining('content'),
    });
    expect(await stored()).toBe(before);
    expect(await audited()).toBe(auditedBefore);
    expect(await inbox(alice)).toEqual([]);
  });

  it('rejects a user id naming no account (none, malformed or deleted) with NOT_FOUND, and writes nothing, audit entry included', async () => {
    const leaving = await registerUser(app());
    const deleted = await app().http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(leaving.access_token),
      payload: { password: PASSWORD },
    });
    expect(deleted.statusCode).toBe(204);
    const before = await stored();
    const auditedBefore = await audited();
    for (const userId of ['0190a5f4-7e3b-7c4d-8e5f-6a7b8c9d0e1f', 'nobody', leaving.user.id]) {
      const refused = await send(userId, { code: 'news', subject: 'Hello' });
      expect(refused.code, userId).toBe('NOT_FOUND');
    }
    expect(await stored()).toBe(before);
    expect(await audited()).toBe(auditedBefore);
  });

  it('keeps NOTIFICATIONS_MAX_PER_USER as for any notification: a send past it removes the oldest', async () => {
    const alice = await registerUser(app());
    for (let i = 1; i <= CAP + 1; i++) {
      expect((await send(alice.user.id, { code: 'news', subject: `Update ${i}` })).value).toBeDefined();
    }
    expect((await inbox(alice)).map((n) => n.subject)).toEqual(['Update 4', 'Update 3', 'Update 2']);
  });
});
