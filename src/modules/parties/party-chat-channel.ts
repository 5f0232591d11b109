import { userTopic } from '../../platform/bus.js';
import { callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { ChatChannelResolver } from '../chat/index.js';
import { partyMemberIds, partyMemberSql } from './parties.repository.js';
import { noSuchParty, partyIdOf } from './party-views.js';

/**
 * A party's chat channel (docs/parties.md, docs/chat.md): its members read and write it, and each
 * message goes to every member's own user topic, so every socket of every member (the sender's
 * included) gets it without joining anything, and recovery replays it as their other events.
 */

/** The one reason the access SQL refuses with: unknown party or not a member, which look alike. */
const NOT_A_MEMBER = 'not_member';

/** Nobody joins a party's chat: chat.join does not name parties, and this says why if it ever did. */
const notJoined = () =>
  new AppError(
    ErrorCode.VALIDATION_FAILED,
    "A party's chat is not joined: its messages reach every member.",
    {
      errors: [{ path: 'party_id', message: 'cannot be joined' }],
    },
  );

export const partyChatChannel: ChatChannelResolver<{ party_id: string }, { party_id: string }> = {
  kind: 'party',
  names: ['party_id'],
  // messages.party_id (migration 0038): deleted with the party, read through its history index.
  columns: { party_id: 'key' },
  // Checked by the statements that store and page the messages: a member who left a moment
  // before can neither write nor read.
  access: {
    sql: (partyIdSql, userIdSql) =>
      `case when ${partyMemberSql(partyIdSql, userIdSql)} then null else '${NOT_A_MEMBER}' end`,
    // A party is visible to its members alone: anyone else is told what an unknown id tells.
    refusal: () => noSuchParty(),
  },
  async resolve(ctx, { party_id }, use) {
    // An id that cannot name a party is refused here (404): the statement's uuid cast would fail.
    const target = { party_id: partyIdOf(party_id) };
    if (use === 'join') throw notJoined();
    // A page publishes nothing.
    if (use === 'history') return { target, topic: [] };
    // The recipients are the members now. A sender who is not among them is refused before any
    // insert; one who leaves after this read is still refused by the insert's access SQL.
    const members = await partyMemberIds(ctx.data, target.party_id);
    if (!members.includes(callerOf(ctx).id)) throw noSuchParty();
    return { target, topic: members.map(userTopic) };
  },
};
