import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { DomainEventData } from '../../../protocol/domain-events.js';
import type { Group, GroupMember } from '../../../protocol/groups.js';
import { type Ctx, callerOf, requireRole } from '../../platform/context.js';
import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { Outbox } from '../../platform/outbox.js';
import { quotaExceeded } from '../../platform/quota.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import type { NotificationsApi } from '../notifications/index.js';
import type { GroupEvents } from './group-events.js';
import { joinApprovedNote, joinRequestedNote } from './group-notifications.js';
import {
  forbidden,
  GROUP_STAFF_ONLY,
  groupIdOf,
  inLockedGroup,
  isManager,
  memberIdOf,
  noSuchGroup,
  notAMember,
  requireManager,
  toGroup,
  toMember,
} from './group-views.js';
import {
  countMembershipsOf,
  countOwnedBy,
  deleteMember,
  deleteRequest,
  groupById,
  insertMember,
  insertRequest,
  lockMemberships,
  lockOwnedGroups,
  longestStandingAdmin,
  managersOf,
  rolesIn,
  setOwner,
  setRole,
} from './groups.repository.js';

export interface RosterLimits {
  /** GROUP_MAX_MEMBERS: joins and approvals past it answer GROUP_FULL. */
  maxMembers: number;
  maxMembershipsPerUser: number;
  maxOwnedPerUser: number;
  /** Joins and join requests per user and window: each one is an event to a roster or its managers. */
  joinLimiter: RateLimiterAbstract;
}

const MEMBER_JOINED = 'group.member.joined';

const groupFull = (max: number) =>
  new AppError(ErrorCode.GROUP_FULL, `The group has its ${max} members; no one joins until someone leaves.`);
const noSuchRequest = () => new AppError(ErrorCode.NOT_FOUND, 'This user has no pending request to join.');

/**
 * Who belongs to a group and with which role (docs/groups.md, the permission table). Every change
 * runs under the group's row lock (inLockedGroup), so the roles it checks hold until it commits;
 * events go out after the commit, on the group's topic and the affected user's own.
 */
export class RosterService {
  constructor(
    private readonly events: GroupEvents,
    private readonly limits: RosterLimits,
    /** A moderator's removal of a member is recorded in the audit log, in its transaction. */
    private readonly audit: Pick<AuditApi, 'record'>,
    /** `group.member.joined` is recorded in the join's transaction, when something consumes it. */
    private readonly outbox: Pick<Outbox, 'hasConsumers' | 'record'>,
    /** The inbox: a request notifies the managers, an approval the requester, in its transaction. */
    private readonly notifications: Pick<NotificationsApi, 'store' | 'announce'>,
  ) {}

  /** Joins an open group, or asks to join a closed one. */
  async join(ctx: Ctx, groupId: string): Promise<GroupMember | { status: 'requested' }> {
    const me = callerOf(ctx).id;
    await consumeOrThrow(this.limits.joinLimiter, me, 'Too many group joins; wait before joining more.');
    const { maxMembers, maxMembershipsPerUser } = this.limits;
    const id = groupIdOf(groupId);
    const outcome = await inLockedGroup(
      ctx,
      id,
      async (data, group) => {
        if ((await rolesIn(data, group.id, [me])).has(me))
          throw new AppError(ErrorCode.CONFLICT, 'You are a member of this group already.');
        // A pending request of a group opened since is replaced by the membership.
        const hadRequest = group.join_policy === 'open' && (await deleteRequest(data, group.id, me));
        if (!hadRequest && (await countMembershipsOf(data, me)) >= maxMembershipsPerUser)
          throw quotaExceeded(
            `An account belongs to at most ${maxMembershipsPerUser} groups, pending requests included.`,
            maxMembershipsPerUser,
          );
        if (group.join_policy === 'closed') {
          const at = ctx.now();
          const requester = await insertRequest(data, group.id, me, at);
          if (!requester)
            throw new AppError(ErrorCode.CONFLICT, 'Your request to join this group is pending already.');
          const managers = await managersOf(data, group.id);
          const notes = await this.notifications.store(
            data,
            managers.map((managerId) => joinRequestedNote(managerId, group, requester)),
            at,
          );
          return { requested: true as const, managers, notes };
        }
        if (group.member_count >= maxMembers) throw groupFull(maxMembers);
        const row = await insertMember(data, {
          groupId: group.id,
          userId: me,
          role: 'member',
          at: ctx.now(),
        });
        if (this.outbox.hasConsumers(MEMBER_JOINED)) await this.recordJoined(data, group.id, me);
        return { requested: false as const, member: toMember(row) };
      },
      (data) => lockMemberships(data, me),
    );
    if (outcome.requested) {
      await this.notifications.announce(outcome.notes, ctx.log);
      await this.events.request(
        ctx,
        'group.join_requested',
        { group_id: id, user_id: me, by: null },
        outcome.managers,
      );
      return { status: 'requested' };
    }
    await this.events.roster(ctx, id, [me], 'group.member_joined', {
      group_id: id,
      member: outcome.member,
      by: null,
    });
    return outcome.member;
  }

  /** The owner or an admin lets a requester in. */
  async approve(ctx: Ctx, groupId: string, userId: string): Promise<GroupMember> {
    const me = callerOf(ctx).id;
    const target = memberIdOf(userId);
    const { maxMembers } = this.limits;
    const [id, member, notes] = await inLockedGroup(ctx, groupId, async (data, group) => {
      await requireManager(data, group.id, me, 'approve join requests');
      if (!(await deleteRequest(data, group.id, target))) throw noSuchRequest();
      if (group.member_count >= maxMembers) throw groupFull(maxMembers);
      const at = ctx.now();
      const row = await insertMember(data, { groupId: group.id, userId: target, role: 'member', at });
      if (this.outbox.hasConsumers(MEMBER_JOINED)) await this.recordJoined(data, group.id, target);
      const approved = await this.notifications.store(data, [joinApprovedNote(target, group, me)], at);
      return [group.id, toMember(row), approved] as const;
    });
    await this.notifications.announce(notes, ctx.log);
    await this.events.roster(ctx, id, [target], 'group.member_joined', { group_id: id, member, by: me });
    return member;
  }

  /** Records that `userId` joined, in the join's transaction `tx`. */
  private async recordJoined(tx: DataAccess, groupId: string, userId: string): Promise<void> {
    const event: DomainEventData[typeof MEMBER_JOINED] = { group_id: groupId, user_id: userId };
    await this.outbox.record(tx, MEMBER_JOINED, event);
  }

  /** The owner or an admin refuses a request; the requester and the group's managers are told. */
  async decline(ctx: Ctx, groupId: string, userId: string): Promise<void> {
    const me = callerOf(ctx).id;
    const target = memberIdOf(userId);
    const [id, managers] = await inLockedGroup(ctx, groupId, async (data, group) => {
      await requireManager(data, group.id, me, 'decline join requests');
      if (!(await deleteRequest(data, group.id, target))) throw noSuchRequest();
      return [group.id, await managersOf(data, group.id)] as const;
    });
    await this.events.request(
      ctx,
      'group.request_declined',
      { group_id: id, user_id: target, by: me },
      managers,
    );
  }

  /**
   * The caller's own id leaves (or withdraws a pending request); another's is a kick: the owner
   * kicks anyone, an admin kicks members only. The owner leaves only after a transfer. `asStaff`,
   * a moderator or admin of the service removes anyone but the owner, recorded in the audit log.
   */
  async remove(ctx: Ctx, groupId: string, userId: string, asStaff = false): Promise<void> {
    const me = (asStaff ? requireRole(ctx, 'moderator', GROUP_STAFF_ONLY) : callerOf(ctx)).id;
    const target = memberIdOf(userId);
    const outcome = await inLockedGroup(ctx, groupId, async (data, group) => {
      const roles = await rolesIn(data, group.id, [me, target]);
      const mine = roles.get(me);
      const theirs = roles.get(target);
      if (asStaff) {
        if (theirs === undefined) throw notAMember();
        if (theirs === 'owner')
          throw new AppError(
            ErrorCode.CONFLICT,
            'The owner is not removed from their group: transfer it or delete the group.',
          );
        await this.audit.record(data, {
          actor: { kind: 'user', id: me },
          action: 'groups.members.remove',
          target: { type: 'group', id: group.id },
          before: { user_id: target, role: theirs },
        });
      } else if (target === me) {
        if (mine === undefined) {
          if (await deleteRequest(data, group.id, me))
            return { id: group.id, left: false, managers: await managersOf(data, group.id) };
          throw notAMember();
        }
        if (mine === 'owner')
          throw new AppError(
            ErrorCode.CONFLICT,
            'The owner leaves only after transferring the group to another member.',
          );
      } else {
        if (!isManager(mine)) throw forbidden("Only the group's owner and admins remove members.");
        if (theirs === undefined) throw notAMember();
        if (theirs === 'owner' || (theirs === 'admin' && mine !== 'owner'))
          throw forbidden('Admins remove members only; the owner removes admins.');
      }
      await deleteMember(data, group.id, target);
      return { id: group.id, left: true, managers: [] };
    });
    if (!outcome.left) {
      const d = { group_id: outcome.id, user_id: me, by: me };
      await this.events.request(ctx, 'group.request_withdrawn', d, outcome.managers);
      return;
    }
    // The sockets leave the group's topic before anything more of it is published.
    await this.events.membershipEnded(ctx, outcome.id, target);
    const kicked = target !== me;
    await this.events.roster(
      ctx,
      outcome.id,
      [target],
      kicked ? 'group.member_kicked' : 'group.member_left',
      {
        group_id: outcome.id,
        user_id: target,
        by: kicked ? me : null,
      },
    );
  }

  /**
   * Makes a member an admin or an admin a member. The owner changes anyone else; an admin promotes
   * members and may step down; nobody changes the owner's role but a transfer.
   */
  async setRole(ctx: Ctx, groupId: string, userId: string, role: 'admin' | 'member'): Promise<GroupMember> {
    const me = callerOf(ctx).id;
    const target = memberIdOf(userId);
    const outcome = await inLockedGroup(ctx, groupId, async (data, group) => {
      const roles = await rolesIn(data, group.id, [me, target]);
      const mine = roles.get(me);
      const theirs = roles.get(target);
      if (!isManager(mine)) throw forbidden("Only the group's owner and admins change roles.");
      if (theirs === undefined) throw notAMember();
      if (theirs === 'owner') {
        if (mine !== 'owner') throw forbidden("Nobody changes the owner's role.");
        throw new AppError(ErrorCode.CONFLICT, "The owner's role changes only by a transfer of the group.");
      }
      const steppingDown = target === me && role === 'member';
      if (mine === 'admin' && theirs === 'admin' && !steppingDown)
        throw forbidden("Admins do not change other admins' roles; the owner does.");
      const member = toMember(await setRole(data, group.id, target, role));
      return { id: group.id, member, changed: theirs !== role };
    });
    if (outcome.changed)
      await this.events.roster(ctx, outcome.id, [target], 'group.role_changed', {
        group_id: outcome.id,
        member: outcome.member,
        by: me,
      });
    return outcome.member;
  }

  /** The owner hands the group to another member and becomes an admin. */
  async transfer(ctx: Ctx, groupId: string, userId: string): Promise<Group> {
    const me = callerOf(ctx).id;
    const target = memberIdOf(userId);
    return this.changeOwner(ctx, groupId, target, async (data, group) => {
      if (group.owner_id !== me) throw forbidden('Only the owner transfers a group.');
      if (target === me)
        throw new AppError(ErrorCode.VALIDATION_FAILED, 'Transfer the group to another member.', {
          errors: [{ path: 'user_id', message: 'must be another member' }],
        });
      if (!(await rolesIn(data, group.id, [target])).has(target)) throw notAMember();
      await setRole(data, group.id, me, 'admin');
    });
  }

  /** The longest-standing admin takes a group whose owner's account was deleted. */
  async claim(ctx: Ctx, groupId: string): Promise<Group> {
    const me = callerOf(ctx).id;
    return this.changeOwner(ctx, groupId, me, async (data, group) => {
      if (group.owner_id !== null) throw new AppError(ErrorCode.CONFLICT, 'This group has an owner.');
      if ((await longestStandingAdmin(data, group.id)) !== me)
        throw forbidden("Only the group's longest-standing admin claims it.");
    });
  }

  /**
   * Makes `newOwner` the owner once `check` passed (and demoted the previous owner), within the
   * owner quota: the new owner's creations take turns with this, so it holds under concurrency.
   */
  private async changeOwner(
    ctx: Ctx,
    groupId: string,
    newOwner: string,
    check: Parameters<typeof inLockedGroup<void>>[2],
  ): Promise<Group> {
    const { maxOwnedPerUser } = this.limits;
    const [group, previous] = await inLockedGroup(
      ctx,
      groupId,
      async (data, locked) => {
        await check(data, locked);
        if ((await countOwnedBy(data, newOwner)) >= maxOwnedPerUser)
          throw quotaExceeded(`An account owns at most ${maxOwnedPerUser} groups.`, maxOwnedPerUser);
        await setRole(data, locked.id, newOwner, 'owner');
        return [toGroup(await setOwner(data, locked.id, newOwner, ctx.now())), locked.owner_id] as const;
      },
      (data) => lockOwnedGroups(data, newOwner),
    );
    await this.events.roster(
      ctx,
      group.id,
      previous ? [newOwner, previous] : [newOwner],
      'group.ownership_changed',
      {
        group_id: group.id,
        owner_id: newOwner,
        previous_owner_id: previous,
      },
    );
    return group;
  }

  /** The caller's group id when they are a member (group chat): 404 for no group, 403 for a non-member. */
  async memberOf(ctx: Ctx, groupId: string): Promise<string> {
    const me = callerOf(ctx).id;
    const id = groupIdOf(groupId);
    if ((await rolesIn(ctx.data, id, [me])).has(me)) return id;
    if (!(await groupById(ctx.data, id))) throw noSuchGroup();
    throw forbidden("Only the group's members read and write its chat.");
  }
}
