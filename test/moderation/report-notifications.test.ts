import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Report } from '../../protocol/moderation.js';
import type { Notification } from '../../protocol/notifications.js';
import { PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { consumerOf, recordedEvents } from '../helpers/domain-events.js';
import { createWorld } from '../helpers/worlds.js';
import { openedSockets } from '../helpers/ws-client.js';
import { moderationCalls } from './moderation.js';

/**
 * What a moderator's decision notifies (docs/notifications.md, `report.resolved`) and the
 * `report.created` domain event. A module consuming `report.created` is added and the app's outbox
 * is stopped (test/helpers/domain-events.ts), so what was recorded stays in outbox_events to be
 * read.
 */

describe('report notifications', () => {
  const app = useTestApp({}, { modules: [...testModules, consumerOf('report.created')] });
  const { call, expectStatus, report, reported, decide, directMessage, worldMessage } = moderationCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  const { recordedBy } = recordedEvents(app);
  afterAll(() => sockets.closeAll());
  let moderator: TokenResponse;
  beforeAll(async () => {
    await app().outbox.stop();
    moderator = await registerWithRole(app(), 'moderator');
  });

  /** The user's notifications, newest first. */
  const inbox = async (user: TokenResponse): Promise<Notification[]> =>
    (await expectStatus(200, 'GET', '/api/notifications', user)).json().items;

  /** An open report by a fresh user of a fresh user's direct message. */
  const openReport = async () => {
    const [sender, reporter] = [await registerUser(app()), await registerUser(app())];
    const messageId = await directMessage(sender, reporter, 'buy gold');
    return { report: await reported(reporter, messageId), messageId, sender, reporter };
  };

  describe('report.resolved', () => {
    it.each([
      ['resolves', 'resolved', 'A moderator resolved your report'],
      ['dismisses', 'dismissed', 'A moderator dismissed your report'],
    ] as const)(
      'notifies the reporter when a moderator %s the report, naming neither the moderator nor the note',
      async (_verb, state, subject) => {
        const { report: filed, messageId, sender, reporter } = await openReport();
        await expectStatus(200, 'PATCH', `/api/moderation/reports/${filed.id}`, moderator, {
          state,
          note: 'the moderator’s own words',
        });
        expect(await inbox(reporter)).toEqual([
          {
            id: expect.any(String),
            code: 'report.resolved',
            subject,
            content: { report_id: filed.id, message_id: messageId, state },
            sender_id: null,
            created_at: expect.any(String),
            read_at: null,
          },
        ]);
        expect(await inbox(sender)).toEqual([]);
      },
    );

    it('names the reported message also when the decision deleted it', async () => {
      const { report: filed, messageId, reporter } = await openReport();
      await expectStatus(200, 'PATCH', `/api/moderation/reports/${filed.id}`, moderator, {
        state: 'resolved',
        delete_message: true,
      });
      expect((await inbox(reporter)).map((note) => note.content)).toEqual([
        { report_id: filed.id, message_id: messageId, state: 'resolved' },
      ]);
    });

    it('names no message when the reported message was gone before the decision', async () => {
      const [owner, sender, first, second] = [
        await registerUser(app()),
        await registerUser(app()),
        await registerUser(app()),
        await registerUser(app()),
      ];
      const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
      const messageId = await worldMessage(sender, worldId);
      const [deleting, later] = [await reported(first, messageId), await reported(second, messageId)];
      await expectStatus(200, 'PATCH', `/api/moderation/reports/${deleting.id}`, moderator, {
        state: 'resolved',
        delete_message: true,
      });
      await expectStatus(200, 'PATCH', `/api/moderation/reports/${later.id}`, moderator, {
        state: 'dismissed',
      });
      expect((await inbox(second)).map((note) => note.content)).toEqual([
        { report_id: later.id, message_id: null, state: 'dismissed' },
      ]);
    });

    it('notifies nobody of a refused decision, which writes nothing', async () => {
      const { report: filed, reporter } = await openReport();
      const plain = await registerUser(app());
      const forbidden = await decide(plain, filed.id, { state: 'resolved' });
      expect([forbidden.statusCode, forbidden.json().code]).toEqual([403, 'FORBIDDEN']);
      const invalid = await decide(moderator, filed.id, { state: 'resolved', note: 'x'.repeat(2001) });
      expect(invalid.statusCode).toBe(422);
      expect(await inbox(reporter)).toEqual([]);
      await expectStatus(200, 'PATCH', `/api/moderation/reports/${filed.id}`, moderator, {
        state: 'dismissed',
      });
      const notified = await inbox(reporter);
      const again = await decide(moderator, filed.id, { state: 'resolved' });
      expect([again.statusCode, again.json().code]).toEqual([409, 'CONFLICT']);
      expect(await inbox(reporter)).toEqual(notified);
    });

    it('notifies nobody when the reporter deleted their account', async () => {
      const { report: filed, reporter } = await openReport();
      await expectStatus(204, 'DELETE', '/api/users/me', reporter, { password: PASSWORD });
      await expectStatus(200, 'PATCH', `/api/moderation/reports/${filed.id}`, moderator, {
        state: 'resolved',
      });
      const stored = await queryRows(
        app().db,
        "select id from notifications where code = 'report.resolved' and content->>'report_id' = ?",
        [filed.id],
      );
      expect(stored).toEqual([]);
    });

    it("pushes the notification live to the reporter's sockets", async () => {
      const { report: filed, reporter } = await openReport();
      const socket = await sockets.open(reporter.access_token);
      await expectStatus(200, 'PATCH', `/api/moderation/reports/${filed.id}`, moderator, {
        state: 'resolved',
      });
      const frame = await socket.next((f) => f.t === 'notification', 5_000);
      expect(frame).toEqual({ t: 'notification', d: (await inbox(reporter))[0], pos: expect.anything() });
    });
  });

  describe('report.created', () => {
    it('is recorded with the report as its reporter sees it, its reporter, and the message then', async () => {
      const [sender, reporter] = [await registerUser(app()), await registerUser(app())];
      const message = (
        await expectStatus(201, 'POST', `/api/chat/dm/${reporter.user.id}/messages`, sender, {
          body: 'buy gold',
        })
      ).json();
      let filed: Report | undefined;
      const events = await recordedBy('report.created', async () => {
        filed = await reported(reporter, message.id, { reason: 'spam', details: 'sells gold' });
      });
      expect(events).toEqual([
        {
          report: { ...filed, reporter_id: reporter.user.id },
          message: {
            id: message.id,
            sender_id: sender.user.id,
            body: 'buy gold',
            created_at: message.created_at,
          },
        },
      ]);
    });

    it('is not recorded for a refused report', async () => {
      const { messageId, sender, reporter } = await openReport();
      const events = await recordedBy('report.created', async () => {
        const twice = await report(reporter, messageId);
        expect([twice.statusCode, twice.json().code]).toEqual([409, 'CONFLICT']);
        const own = await report(sender, messageId);
        expect(own.statusCode).toBe(422);
        const unknown = await call(
          'POST',
          '/api/chat/messages/0190a000-0000-7000-8000-00000000dead/reports',
          reporter,
          { reason: 'spam' },
        );
        expect(unknown.statusCode).toBe(404);
      });
      expect(events).toEqual([]);
    });
  });
});
