import {
  adminGroupsDelete,
  adminGroupsList,
  adminGroupsRemoveMember,
} from '../../../protocol/group-admin.js';
import {
  chatGroupHistory,
  chatSendToGroup,
  groupsApprove,
  groupsClaim,
  groupsCreate,
  groupsDecline,
  groupsDelete,
  groupsGet,
  groupsJoin,
  groupsMembers,
  groupsMine,
  groupsRemoveMember,
  groupsRequests,
  groupsSearch,
  groupsSetRole,
  groupsTransfer,
  groupsUpdate,
} from '../../../protocol/groups.js';
import type { Ctx } from '../../platform/context.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import type { ChatApi } from '../chat/index.js';
import type { NotificationsApi } from '../notifications/index.js';
import type { UsersApi } from '../users/index.js';
import { GROUP_TOPIC_PREFIX, groupChatChannel, groupTopic } from './group-chat-channel.js';
import { GROUP_MEMBERSHIP_ENDED, GroupEvents, type GroupMembershipEndedEvent } from './group-events.js';
import { GroupsService } from './groups.service.js';
import { RosterService } from './roster.service.js';

export { groupMemberSql } from './groups.repository.js';

/** What other modules may use of groups: who may see a group's chat messages (moderation's reports). */
export interface GroupsApi {
  /** The group's canonical id when the caller is a member: 404 for no such group, 403 otherwise. */
  memberOf(ctx: Ctx, groupId: string): Promise<string>;
}

/** Groups: settings, roster and roles, join requests, and their events (docs/groups.md). */
export const groupsModule = defineModule({
  name: 'groups',
  tables: ['groups', 'group_members', 'group_join_requests'],
  needs: ['users', 'audit', 'chat', 'notifications'],
  setup(
    { bus, kv, config, gateway, outbox },
    {
      audit,
      chat,
      notifications,
    }: { users: UsersApi; audit: AuditApi; chat: ChatApi; notifications: NotificationsApi },
  ) {
    // A socket that joins a group's chat again is sent what it missed, its roster events included.
    bus.recordTopics(GROUP_TOPIC_PREFIX);
    gateway.onUserEvent(GROUP_MEMBERSHIP_ENDED, (connection, event) =>
      gateway.unsubscribe(connection, [groupTopic((event.d as GroupMembershipEndedEvent).group_id)]),
    );
    const events = new GroupEvents(bus);
    const groups = new GroupsService(
      events,
      {
        maxOwnedPerUser: config.MAX_GROUPS_PER_USER,
        maxMembershipsPerUser: config.GROUP_MAX_MEMBERSHIPS_PER_USER,
        createLimiter: createLimiter(kv, {
          keyPrefix: 'group-create',
          points: config.CREATE_RATE_LIMIT_COUNT,
          durationSeconds: config.CREATE_RATE_LIMIT_WINDOW_SECONDS,
        }),
      },
      audit,
      outbox,
    );
    const roster = new RosterService(
      events,
      {
        maxMembers: config.GROUP_MAX_MEMBERS,
        maxMembershipsPerUser: config.GROUP_MAX_MEMBERSHIPS_PER_USER,
        maxOwnedPerUser: config.MAX_GROUPS_PER_USER,
        joinLimiter: createLimiter(kv, {
          keyPrefix: 'group-join',
          points: config.SOCIAL_RATE_LIMIT_COUNT,
          durationSeconds: config.SOCIAL_RATE_LIMIT_WINDOW_SECONDS,
        }),
      },
      audit,
      outbox,
      notifications,
    );
    // The group's chat takes chat's pipeline, with this module's resolver deciding who may use it.
    const groupChat = chat.channelKind(groupChatChannel);
    const api: GroupsApi = { memberOf: (ctx, groupId) => roster.memberOf(ctx, groupId) };
    return {
      api,
      operations: [
        serve(groupsCreate, (ctx, input) => groups.create(ctx, input)),
        serve(groupsGet, (ctx, { group_id }) => groups.get(ctx, group_id)),
        serve(groupsUpdate, (ctx, { group_id, ...change }) => groups.update(ctx, group_id, change)),
        serve(groupsDelete, async (ctx, { group_id }) => {
          await groups.delete(ctx, group_id);
          return null;
        }),
        serve(groupsSearch, (ctx, { q, ...page }) => groups.search(ctx, q, page)),
        serve(groupsMine, (ctx, page) => groups.mine(ctx, page)),
        serve(groupsMembers, (ctx, { group_id, ...page }) => groups.members(ctx, group_id, page)),
        serve(groupsRequests, (ctx, { group_id, ...page }) => groups.requests(ctx, group_id, page)),
        serve(groupsJoin, (ctx, { group_id }) => roster.join(ctx, group_id)),
        serve(groupsApprove, (ctx, { group_id, user_id }) => roster.approve(ctx, group_id, user_id)),
        serve(groupsDecline, async (ctx, { group_id, user_id }) => {
          await roster.decline(ctx, group_id, user_id);
          return null;
        }),
        serve(groupsRemoveMember, async (ctx, { group_id, user_id }) => {
          await roster.remove(ctx, group_id, user_id);
          return null;
        }),
        serve(groupsSetRole, (ctx, { group_id, user_id, role }) =>
          roster.setRole(ctx, group_id, user_id, role),
        ),
        serve(groupsTransfer, (ctx, { group_id, user_id }) => roster.transfer(ctx, group_id, user_id)),
        serve(groupsClaim, (ctx, { group_id }) => roster.claim(ctx, group_id)),
        serve(adminGroupsList, (ctx, { query, ...page }) => groups.adminSearch(ctx, query, page)),
        serve(adminGroupsRemoveMember, async (ctx, { group_id, user_id }) => {
          await roster.remove(ctx, group_id, user_id, true);
          return null;
        }),
        serve(adminGroupsDelete, async (ctx, { group_id }) => {
          await groups.delete(ctx, group_id, true);
          return null;
        }),
        serve(chatSendToGroup, (ctx, { group_id, body }) => groupChat.send(ctx, { group_id }, body)),
        serve(chatGroupHistory, (ctx, { group_id, ...page }) => groupChat.history(ctx, { group_id }, page)),
      ],
    };
  },
});
