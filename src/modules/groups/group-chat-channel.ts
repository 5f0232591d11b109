import type { EventAudience } from '../../platform/bus.js';
import { canonicalId } from '../../platform/ids.js';
import type { ChatChannelResolver } from '../chat/index.js';
import { forbidden, groupIdOf, noSuchGroup } from './group-views.js';
import { groupMemberSql } from './groups.repository.js';

/**
 * A group's chat channel (docs/groups.md, docs/chat.md): its members read and write it; its topic,
 * which the sockets that joined the chat subscribe to, also carries the group's roster events.
 */

/** The bus topic of a group: its chat messages and roster events. Recorded, so a socket recovers them. */
export const GROUP_TOPIC_PREFIX = 'group:';
export const groupTopic = (groupId: string) => `${GROUP_TOPIC_PREFIX}${groupId}`;

/**
 * The filter of a socket's subscription to a group's topic: an event its user also hears on their
 * own topic (a roster change about them, GroupEvents.roster) is skipped here, so they get it once.
 */
export const groupDeliveryFilter =
  (userId: string) =>
  (audience: EventAudience | undefined): boolean =>
    !audience?.toOwnTopic?.includes(userId);

/** The reasons `groupChatAccessSql` refuses with. */
const NOT_A_MEMBER = 'not_member';
const NO_SUCH_GROUP = 'no_group';

/**
 * SQL: null when the user `userIdSql` names is a member of the group `groupIdSql` names (uuid
 * expressions), else why not, so the statement that stores or reads the chat answers 403 or 404
 * in the same round trip. A member, the usual case, costs one index probe.
 */
export const groupChatAccessSql = (groupIdSql: string, userIdSql: string) =>
  `case when ${groupMemberSql(groupIdSql, userIdSql)} then null
     when exists (select 1 from groups where id = ${groupIdSql}) then '${NOT_A_MEMBER}'
     else '${NO_SUCH_GROUP}' end`;

export const groupChatChannel: ChatChannelResolver<{ group_id: string }, { group_id: string }> = {
  kind: 'group',
  names: ['group_id'],
  columns: { group_id: 'key' },
  // Checked by the statement itself: a member kicked a moment before cannot write.
  access: {
    sql: groupChatAccessSql,
    refusal: (reason) =>
      reason === NOT_A_MEMBER
        ? forbidden("Only the group's members read and write its chat.")
        : noSuchGroup(),
  },
  resolve(_ctx, { group_id }) {
    // An id that cannot name a group is refused here (404): the statement's uuid cast would fail.
    const id = groupIdOf(group_id);
    return {
      target: { group_id: id },
      topic: groupTopic(id),
      deliveryFilter: groupDeliveryFilter,
      // A kick unsubscribes the member's sockets (GROUP_MEMBERSHIP_ENDED): one committed while a
      // join was being made would find no subscription to end.
      recheckJoin: true,
    };
  },
  topicOf: ({ group_id }) => groupTopic(canonicalId(group_id)),
};
