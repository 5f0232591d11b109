import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { channelStatements, insertChannelMessages } from '../../src/modules/chat/channel-chat.repository.js';
import { groupChatChannel } from '../../src/modules/groups/group-chat-channel.js';
import { statementsAtOnce } from '../../src/platform/batcher.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { registerUser } from '../helpers/accounts.js';
import { statementBatches, useTestApp, whileTransactionOpen } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { groupCalls } from './groups.js';

/** Group chat sends stored several to a statement (channel chat's batches, docs/chat.md). */

const UNKNOWN_ID = '0190a000-0000-7000-8000-00000000beef';
const messagesUrl = (groupId: string) => `/api/groups/${groupId}/messages`;

describe('group chat batches', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 1000 });
  const { call, createGroup, joined } = groupCalls(app);
  const user = () => registerUser(app());
  const bodiesOf = async (groupId: string) =>
    (
      await queryRows<{ body: string }>(
        app().db,
        'select body from messages where group_id = ? order by created_at, id',
        [groupId],
      )
    ).map((row) => row.body);

  it("stores several messages in one statement, each checked for its own sender, answering in order: a member's, an outsider's, an unknown group's", async () => {
    const [owner, outsider] = [await user(), await user()];
    const group = await createGroup(owner);
    const statements = channelStatements('group', groupChatChannel.columns, groupChatChannel.access);
    const at = (ms: number) => new Date(Date.parse('2030-01-01T00:00:00Z') + ms);
    const input = (groupId: string, sender: TokenResponse, body: string, ms: number) => ({
      target: { group_id: groupId },
      message: { id: newId(), sender_id: sender.user.id, body, filtered: false, at: at(ms) },
    });
    const batch = [
      input(group.id, owner, 'one', 1),
      input(group.id, outsider, 'not mine to write', 2),
      input(UNKNOWN_ID, owner, 'nowhere', 3),
      input(group.id, owner, 'two', 4),
    ];

    const outcomes = await insertChannelMessages(app().db.data, statements, batch);

    expect(outcomes.map((outcome) => outcome.refusal)).toEqual([null, 'not_member', 'no_group', null]);
    expect(outcomes.map((outcome) => outcome.row?.body)).toEqual(['one', undefined, undefined, 'two']);
    expect(outcomes[3]?.row).toEqual({
      id: batch[3]?.message.id,
      sender_id: owner.user.id,
      body: 'two',
      filtered: false,
      created_key: '2030-01-01T00:00:00.004000Z',
    });
    expect(await bodiesOf(group.id)).toEqual(['one', 'two']);
  });

  it('stores the sends that wait while the store statements are busy with one statement, answering each on its own (201, 403, 404)', async () => {
    const owner = await user();
    const members = await Promise.all(Array.from({ length: 8 }, () => user()));
    const outsider = await user();
    const group = await createGroup(owner);
    for (const member of members) await joined(member, group.id);
    const before = await statementBatches(app(), 'channel_store');

    // The group's row is locked meanwhile, so the statements that may run at once (the channel's
    // storeConcurrency) wait on its foreign key, and the sends after them wait for those.
    const busy = statementsAtOnce(app().db.poolSize);
    let sending: Promise<{ statusCode: number }[]> | undefined;
    await whileTransactionOpen(
      app,
      (tx) => executeBound(tx, 'select 1 from groups where id = $1 for update', [group.id]),
      () => {
        sending = Promise.all([
          ...members.map((member, i) => call('POST', messagesUrl(group.id), member, { body: `m${i}` })),
          call('POST', messagesUrl(group.id), outsider, { body: 'let me in' }),
          call('POST', messagesUrl(UNKNOWN_ID), owner, { body: 'nowhere' }),
        ]);
      },
    );
    const answers = (await sending) ?? [];

    expect(answers.map((answer) => answer.statusCode)).toEqual([...members.map(() => 201), 403, 404]);
    expect((await bodiesOf(group.id)).sort()).toEqual(members.map((_, i) => `m${i}`).sort());
    const after = await statementBatches(app(), 'channel_store');
    expect(after.calls - before.calls).toBe(members.length + 2);
    // The locked sends' statements, then one for all the sends that waited.
    expect(after.statements - before.statements).toBe(busy + 1);
  });
});
