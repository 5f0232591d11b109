import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { DomainEventData } from '../../../protocol/domain-events.js';
import type {
  Group,
  GroupJoinPolicy,
  GroupJoinRequest,
  GroupMember,
  GroupMembership,
  GroupRole,
} from '../../../protocol/groups.js';
import { type Ctx, callerOf, requireRole } from '../../platform/context.js';
import {
  cursorField,
  cursorKey,
  decodeCursor,
  isTimeIdKey,
  pageFrom,
  timeOfKey,
} from '../../platform/cursor.js';
import { transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { searchTerms } from '../../platform/name-search.js';
import type { Outbox } from '../../platform/outbox.js';
import { quotaExceeded } from '../../platform/quota.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import type { GroupEvents } from './group-events.js';
import { membershipsPage, requestsPage, rosterPage, searchPage } from './group-lists.repository.js';
import {
  forbidden,
  GROUP_STAFF_ONLY,
  groupIdOf,
  inLockedGroup,
  noSuchGroup,
  requireManager,
  toGroup,
  toMember,
} from './group-views.js';
import {
  countMembershipsOf,
  countOwnedBy,
  deleteGroup,
  groupById,
  insertGroup,
  insertMember,
  lockMemberships,
  lockOwnedGroups,
  updateGroup,
} from './groups.repository.js';

export interface GroupLimits {
  maxOwnedPerUser: number;
  maxMembershipsPerUser: number;
  /** Group creations per user and window (CREATE_RATE_LIMIT_*, a bucket apart from worlds'). */
  createLimiter: RateLimiterAbstract;
}

type Page = { limit: number; cursor?: string | undefined };

const isRosterKey = cursorKey(
  cursorField.oneOf(['owner', 'admin', 'member'] as const),
  cursorField.time,
  cursorField.id,
);
const isNameKey = cursorKey(cursorField.text);

const GROUP_CREATED = 'group.created';

const nameTaken = () =>
  new AppError(ErrorCode.CONFLICT, 'A group with this name exists (names ignore case).');

/** Groups, their settings and their lists (docs/groups.md); roster changes are RosterService's. */
export class GroupsService {
  constructor(
    private readonly events: GroupEvents,
    private readonly limits: GroupLimits,
    /** A moderator's deletion is recorded in the audit log, in its transaction. */
    private readonly audit: Pick<AuditApi, 'record'>,
    /** `group.created` is recorded in the creation's transaction, when something consumes it. */
    private readonly outbox: Pick<Outbox, 'hasConsumers' | 'record'>,
  ) {}

  /** Creates the group with the caller as its owner and first member. */
  async create(
    ctx: Ctx,
    input: { name: string; description?: string | undefined; join_policy?: GroupJoinPolicy | undefined },
  ): Promise<Group> {
    const me = callerOf(ctx).id;
    await consumeOrThrow(
      this.limits.createLimiter,
      me,
      'Too many groups created; wait before creating more.',
    );
    const { maxOwnedPerUser, maxMembershipsPerUser } = this.limits;
    const at = ctx.now();
    const group = toGroup({
      id: newId(),
      name: input.name,
      description: input.description ?? '',
      join_policy: input.join_policy ?? 'open',
      owner_id: me,
      member_count: 1,
      created_at: at,
    });
    try {
      await transaction(ctx.data, async (tx) => {
        await lockOwnedGroups(tx, me);
        if ((await countOwnedBy(tx, me)) >= maxOwnedPerUser)
          throw quotaExceeded(`An account owns at most ${maxOwnedPerUser} groups.`, maxOwnedPerUser);
        await lockMemberships(tx, me);
        if ((await countMembershipsOf(tx, me)) >= maxMembershipsPerUser)
          throw quotaExceeded(
            `An account belongs to at most ${maxMembershipsPerUser} groups, pending requests included.`,
            maxMembershipsPerUser,
          );
        await insertGroup(tx, {
          id: group.id,
          name: group.name,
          description: group.description,
          joinPolicy: group.join_policy,
          ownerId: me,
          at,
        });
        await insertMember(tx, { groupId: group.id, userId: me, role: 'owner', at });
        if (this.outbox.hasConsumers(GROUP_CREATED)) {
          const event: DomainEventData[typeof GROUP_CREATED] = { group };
          await this.outbox.record(tx, GROUP_CREATED, event);
        }
      });
    } catch (error) {
      if (hasSqlState(error, SqlState.UNIQUE_VIOLATION)) throw nameTaken();
      // The token outlived its account by a moment: the group would have no owner to reference.
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION))
        throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
      throw error;
    }
    return group;
  }

  async get(ctx: Ctx, groupId: string): Promise<Group> {
    const row = await groupById(ctx.data, groupIdOf(groupId));
    if (!row) throw noSuchGroup();
    return toGroup(row);
  }

  /** Owner and admins change the name, description and join policy. */
  async update(
    ctx: Ctx,
    groupId: string,
    change: {
      name?: string | undefined;
      description?: string | undefined;
      join_policy?: GroupJoinPolicy | undefined;
    },
  ): Promise<Group> {
    const me = callerOf(ctx).id;
    let group: Group;
    try {
      group = await inLockedGroup(ctx, groupId, async (data, locked) => {
        await requireManager(data, locked.id, me, 'change its settings');
        const updated = await updateGroup(data, locked.id, {
          name: change.name,
          description: change.description,
          joinPolicy: change.join_policy,
          at: ctx.now(),
        });
        if (!updated) throw noSuchGroup();
        return toGroup(updated);
      });
    } catch (error) {
      if (hasSqlState(error, SqlState.UNIQUE_VIOLATION)) throw nameTaken();
      throw error;
    }
    await this.events.roster(ctx, group.id, [], 'group.updated', { group });
    return group;
  }

  /**
   * Deletes the group with its roster, requests and chat: the owner only, or `asStaff` a moderator
   * or admin of the service, whose deletion is recorded with the group as it was.
   */
  async delete(ctx: Ctx, groupId: string, asStaff = false): Promise<void> {
    const me = (asStaff ? requireRole(ctx, 'moderator', GROUP_STAFF_ONLY) : callerOf(ctx)).id;
    const id = await inLockedGroup(ctx, groupId, async (data, group) => {
      if (asStaff)
        await this.audit.record(data, {
          actor: { kind: 'user', id: me },
          action: 'groups.delete',
          target: { type: 'group', id: group.id },
          before: toGroup(group),
        });
      else if (group.owner_id !== me) throw forbidden('Only the owner deletes a group.');
      await deleteGroup(data, group.id);
      return group.id;
    });
    await this.events.roster(ctx, id, [], 'group.deleted', { group_id: id });
  }

  /** The search of every group for moderators and admins (their list shows what anyone's does). */
  async adminSearch(ctx: Ctx, q: string | undefined, page: Page) {
    requireRole(ctx, 'moderator', GROUP_STAFF_ONLY);
    return this.search(ctx, q, page);
  }

  async search(ctx: Ctx, q: string | undefined, page: Page) {
    const after = decodeCursor(page.cursor, isNameKey);
    const rows = await searchPage(ctx.data, {
      query: searchTerms(q),
      after: after?.[0],
      limit: page.limit + 1,
    });
    return pageFrom(rows, page.limit, toGroup, (row) => [row.name_key]);
  }

  async mine(ctx: Ctx, page: Page): Promise<{ items: GroupMembership[]; next_cursor: string | null }> {
    const before = decodeCursor(page.cursor, isTimeIdKey);
    const rows = await membershipsPage(ctx.data, callerOf(ctx).id, { before, limit: page.limit + 1 });
    return pageFrom(
      rows,
      page.limit,
      (row) => ({ group: toGroup(row), role: row.role, joined_at: timeOfKey(row.joined_key) }),
      (row) => [row.joined_key, row.id],
    );
  }

  /** The roster: anyone signed in may read it. */
  async members(
    ctx: Ctx,
    groupId: string,
    page: Page & { role?: GroupRole | undefined },
  ): Promise<{ items: GroupMember[]; next_cursor: string | null }> {
    const id = groupIdOf(groupId);
    const after = decodeCursor(page.cursor, isRosterKey);
    const rows = await rosterPage(ctx.data, id, { role: page.role, after, limit: page.limit + 1 });
    // An empty page of a group that exists (filtered, or past its end) is an answer; of none, 404.
    if (rows.length === 0 && !(await groupById(ctx.data, id))) throw noSuchGroup();
    return pageFrom(rows, page.limit, toMember, (row) => [row.role, row.joined_key, row.user_id]);
  }

  /** Pending join requests: the owner and admins only. */
  async requests(
    ctx: Ctx,
    groupId: string,
    page: Page,
  ): Promise<{ items: GroupJoinRequest[]; next_cursor: string | null }> {
    const me = callerOf(ctx).id;
    const id = groupIdOf(groupId);
    const after = decodeCursor(page.cursor, isTimeIdKey);
    if (!(await groupById(ctx.data, id))) throw noSuchGroup();
    await requireManager(ctx.data, id, me, 'see its join requests');
    const rows = await requestsPage(ctx.data, id, { after, limit: page.limit + 1 });
    return pageFrom(
      rows,
      page.limit,
      (row) => ({
        user_id: row.user_id,
        username: row.username,
        created_at: timeOfKey(row.created_key),
      }),
      (row) => [row.created_key, row.user_id],
    );
  }
}
