import type { EventPayloads } from '../../../protocol/frames.js';
import { type EventBus, userTopic } from '../../platform/bus.js';
import type { Ctx } from '../../platform/context.js';
import { groupTopic } from './group-chat-channel.js';

/**
 * A group's events go out once, on its topic (the sockets that joined its chat: its chat channel's
 * topic, group-chat-channel.ts) and the affected user's own topic together: one publish, one Redis
 * command, however large the roster (EventBus.publish), instead of one per member.
 */

/**
 * Published on a user's own topic when they stop being a member, and handled on the nodes rather
 * than sent to clients (Gateway.onUserEvent): their sockets leave the group's topic at once,
 * everywhere, so a kicked member hears nothing more of the group.
 */
export const GROUP_MEMBERSHIP_ENDED = 'groups.membership_ended';
export interface GroupMembershipEndedEvent {
  group_id: string;
}

type GroupEventType = Extract<keyof EventPayloads, `group.${string}`>;

export class GroupEvents {
  constructor(private readonly bus: EventBus) {}

  /**
   * To the group's topic and to the own sockets of the users the change is about; their sockets
   * that joined the group's topic skip it there (groupDeliveryFilter), so each gets it once.
   */
  async roster<T extends GroupEventType>(
    ctx: Ctx,
    groupId: string,
    userIds: readonly string[],
    t: T,
    d: EventPayloads[T],
  ): Promise<void> {
    const audience = userIds.length > 0 ? { toOwnTopic: userIds } : undefined;
    await this.bus.publishCommitted(
      [groupTopic(groupId), ...userIds.map(userTopic)],
      { t, d, audience },
      ctx.log,
    );
  }

  /** Join requests are the owner's and admins' business: to them and the requester, not the roster. */
  async request(
    ctx: Ctx,
    t: 'group.join_requested' | 'group.request_declined' | 'group.request_withdrawn',
    d: EventPayloads['group.join_requested'],
    managerIds: readonly string[],
  ): Promise<void> {
    const userIds = new Set([d.user_id, ...managerIds]);
    await this.bus.publishCommitted([...userIds].map(userTopic), { t, d }, ctx.log);
  }

  /** Ends the user's sockets' subscription to the group (GROUP_MEMBERSHIP_ENDED), before the roster hears of it. */
  async membershipEnded(ctx: Ctx, groupId: string, userId: string): Promise<void> {
    const d: GroupMembershipEndedEvent = { group_id: groupId };
    await this.bus.publishCommitted(userTopic(userId), { t: GROUP_MEMBERSHIP_ENDED, d }, ctx.log, {
      transient: true,
    });
  }
}
