import { describe, expect, it } from 'vitest';
import { changeRole } from '../../src/modules/users/index.js';
import { auditEntriesOf } from '../audit/audit.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { moderationCalls } from './moderation.js';

describe("moderators' decisions on reports", () => {
  const app = useTestApp();
  const { reported, decide, queue, directMessage, worldMessage, reportRow, messageCount, expectStatus } =
    moderationCalls(app);
  const user = () => registerUser(app());
  const moderator = () => registerWithRole(app(), 'moderator');

  /** A report by a fresh user of a fresh user's direct message; answers the report and the message. */
  const openReport = async (reason = 'spam') => {
    const [sender, reporter] = [await user(), await user()];
    const messageId = await directMessage(sender, reporter, `message for ${reason}`);
    return { report: await reported(reporter, messageId, { reason }), messageId, sender, reporter };
  };

  it('refuses the queue and decisions to users without a moderating role with 403 FORBIDDEN, changing nothing', async () => {
    const { report, messageId } = await openReport();
    const plain = await user();
    const listed = await queue(plain);
    expect([listed.statusCode, listed.json().code]).toEqual([403, 'FORBIDDEN']);
    const decided = await decide(plain, report.id, { state: 'resolved', delete_message: true });
    expect([decided.statusCode, decided.json().code]).toEqual([403, 'FORBIDDEN']);
    // The role must be on the token: a grant takes effect at the next sign-in, as documented.
    const promoted = await user();
    await changeRole(app().db.data, promoted.user.username, 'moderator', 'grant');
    const stale = await decide(promoted, report.id, { state: 'resolved' });
    expect(stale.statusCode).toBe(403);
    expect(await reportRow(report.id)).toMatchObject({
      state: 'open',
      moderator_id: null,
      resolved_at: null,
    });
    expect(await messageCount(messageId)).toBe(1);
  });

  it.each([
    ['resolves', 'resolved', 'moderator'],
    ['dismisses', 'dismissed', 'admin'],
  ] as const)(
    '%s an open report with a trimmed note, recording who decided and when',
    async (_verb, state, role) => {
      const { report, messageId, reporter } = await openReport();
      const mod = await registerWithRole(app(), role);
      const answer = (
        await expectStatus(200, 'PATCH', `/api/moderation/reports/${report.id}`, mod, {
          state,
          note: '  handled  ',
        })
      ).json();
      expect(answer).toMatchObject({
        ...report,
        state,
        reporter_id: reporter.user.id,
        moderator_id: mod.user.id,
        note: 'handled',
        resolved_at: expect.any(String),
        message: { id: messageId },
      });
      expect(await reportRow(report.id)).toMatchObject({ state, moderator_id: mod.user.id, note: 'handled' });
      expect(await messageCount(messageId)).toBe(1);
    },
  );

  it('deletes the reported message in the same decision; every report of it stays, with message_id null', async () => {
    const [owner, sender, first, second] = [await user(), await user(), await user(), await user()];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const messageId = await worldMessage(sender, worldId);
    const decided = await reported(first, messageId);
    const other = await reported(second, messageId);
    const answer = (
      await expectStatus(200, 'PATCH', `/api/moderation/reports/${decided.id}`, await moderator(), {
        state: 'resolved',
        delete_message: true,
      })
    ).json();
    expect(answer).toMatchObject({ id: decided.id, state: 'resolved', message_id: null, message: null });
    expect(await messageCount(messageId)).toBe(0);
    expect(await reportRow(decided.id)).toMatchObject({ message_id: null, state: 'resolved' });
    expect(await reportRow(other.id)).toMatchObject({ message_id: null, state: 'open' });
  });

  it('refuses a decision on a report no longer open with 409 CONFLICT, keeping the first decision and the message', async () => {
    const { report, messageId } = await openReport();
    const [firstMod, secondMod] = [await moderator(), await moderator()];
    await expectStatus(200, 'PATCH', `/api/moderation/reports/${report.id}`, firstMod, {
      state: 'dismissed',
      note: 'first',
    });
    const before = await reportRow(report.id);
    const again = await decide(secondMod, report.id, {
      state: 'resolved',
      note: 'second',
      delete_message: true,
    });
    expect([again.statusCode, again.json().code]).toEqual([409, 'CONFLICT']);
    expect(await reportRow(report.id)).toEqual(before);
    expect(before).toMatchObject({ state: 'dismissed', moderator_id: firstMod.user.id, note: 'first' });
    expect(await messageCount(messageId)).toBe(1);
  });

  it('lets exactly one of two moderators deciding at once succeed; the other answers 409', async () => {
    const { report } = await openReport();
    const [a, b] = [await moderator(), await moderator()];
    const answers = await Promise.all([
      decide(a, report.id, { state: 'resolved' }),
      decide(b, report.id, { state: 'dismissed' }),
    ]);
    expect(answers.map((response) => response.statusCode).sort()).toEqual([200, 409]);
  });

  it.each([
    ['an unknown report', '0190a000-0000-7000-8000-00000000dead'],
    ['an id that cannot name a report', 'not-a-report'],
  ])('answers 404 NOT_FOUND for a decision on %s', async (_case, reportId) => {
    const response = await decide(await moderator(), reportId, { state: 'resolved' });
    expect([response.statusCode, response.json().code]).toEqual([404, 'NOT_FOUND']);
  });

  it.each([
    ['the state open', { state: 'open' }, 'body.state'],
    ['a missing state', { note: 'n' }, 'body.state'],
    [
      'a note over 2000 characters after trimming',
      { state: 'resolved', note: ` ${'x'.repeat(2001)} ` },
      'note',
    ],
    ['a note holding U+0000', { state: 'resolved', note: 'a\u0000b' }, 'body.note'],
    [
      'delete_message that is not a boolean',
      { state: 'resolved', delete_message: 'yes' },
      'body.delete_message',
    ],
  ])(
    'refuses a decision with %s with 422 VALIDATION_FAILED and changes nothing',
    async (_case, payload, path) => {
      const { report, messageId } = await openReport();
      const response = await decide(await moderator(), report.id, { delete_message: true, ...payload });
      expect(response.statusCode).toBe(422);
      expect(response.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        errors: [expect.objectContaining({ path })],
      });
      expect(await reportRow(report.id)).toMatchObject({ state: 'open', moderator_id: null, note: null });
      expect(await messageCount(messageId)).toBe(1);
    },
  );

  it('records each decision in the audit log with the moderator, and a refused decision records nothing', async () => {
    const { report, messageId } = await openReport();
    const mod = await moderator();
    await expectStatus(200, 'PATCH', `/api/moderation/reports/${report.id}`, mod, {
      state: 'resolved',
      note: 'gone',
      delete_message: true,
    });
    const again = await decide(mod, report.id, { state: 'dismissed' });
    expect(again.statusCode).toBe(409);
    expect(await auditEntriesOf(app().db, report.id)).toEqual([
      {
        actor_kind: 'user',
        actor_id: mod.user.id,
        action: 'moderation.reports.resolve',
        target_type: 'report',
        target_id: report.id,
        before: { state: 'open', message_id: messageId },
        after: { state: 'resolved', note: 'gone', message_deleted: true },
      },
    ]);
  });
});
