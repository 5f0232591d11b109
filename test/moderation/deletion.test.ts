import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { moderationCalls } from './moderation.js';

describe('reports outlive what they name', () => {
  const app = useTestApp();
  const { reported, decide, worldMessage, directMessage, reportRow, messageCount, expectStatus } =
    moderationCalls(app);
  const user = () => registerUser(app());

  const deleteAccount = (account: TokenResponse) =>
    expectStatus(204, 'DELETE', '/api/users/me', account, { password: PASSWORD });

  /** A report of a message in a public world: world messages outlive their sender and reporter. */
  const worldReport = async () => {
    const [owner, sender, reporter] = [await user(), await user(), await user()];
    const { worldId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const messageId = await worldMessage(sender, worldId);
    const report = await reported(reporter, messageId);
    return { owner, sender, reporter, worldId, messageId, report };
  };

  it("keeps the report with reporter_id null when the reporter's account is deleted", async () => {
    const { reporter, messageId, report } = await worldReport();
    await deleteAccount(reporter);
    expect(await reportRow(report.id)).toMatchObject({
      reporter_id: null,
      message_id: messageId,
      state: 'open',
    });
  });

  it("keeps the decided report with moderator_id null when the moderator's account is deleted", async () => {
    const { report } = await worldReport();
    const moderator = await registerWithRole(app(), 'moderator');
    await expectStatus(200, 'PATCH', `/api/moderation/reports/${report.id}`, moderator, {
      state: 'resolved',
      note: 'done',
    });
    await deleteAccount(moderator);
    expect(await reportRow(report.id)).toMatchObject({ moderator_id: null, state: 'resolved', note: 'done' });
  });

  it('keeps the report with message_id null when the message is deleted with its world', async () => {
    const { owner, worldId, messageId, report } = await worldReport();
    await expectStatus(204, 'DELETE', `/api/worlds/${worldId}`, owner);
    expect(await messageCount(messageId)).toBe(0);
    expect(await reportRow(report.id)).toMatchObject({ message_id: null, state: 'open' });
  });

  it('keeps the report with message_id null when a direct message goes with its sender’s account', async () => {
    const [sender, reporter] = [await user(), await user()];
    const messageId = await directMessage(sender, reporter);
    const report = await reported(reporter, messageId);
    await deleteAccount(sender);
    expect(await messageCount(messageId)).toBe(0);
    expect(await reportRow(report.id)).toMatchObject({ message_id: null, reporter_id: reporter.user.id });
  });

  it('still lets a moderator decide a report whose message is gone, and shows it without a message', async () => {
    const { owner, worldId, report } = await worldReport();
    await expectStatus(204, 'DELETE', `/api/worlds/${worldId}`, owner);
    const response = await decide(await registerWithRole(app(), 'admin'), report.id, {
      state: 'dismissed',
      delete_message: true,
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ state: 'dismissed', message_id: null, message: null });
  });
});
