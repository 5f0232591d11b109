import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { EventPayloads } from '../../../protocol/frames.js';
import type { FriendRequest, RelatedUser, SocialUser } from '../../../protocol/social.js';
import { type EventBus, userTopic } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { NotificationRequest, NotificationsApi } from '../notifications/index.js';
import type { ProfilesApi } from '../profiles/index.js';
import type { UsersApi } from '../users/index.js';
import { privacyAdmits, relationsOf } from './relations.js';
import {
  acceptFriendRequest,
  deleteBlock,
  deleteFollow,
  deleteFriendRequest,
  deleteFriendship,
  friendshipBetween,
  insertBlock,
  insertFollow,
  insertFriendRequest,
  type ListName,
  type ListRow,
  listOf,
  lockPair,
  severPair,
} from './social.repository.js';

/**
 * Published on both users' own topics when one blocks the other, and handled on the nodes rather
 * than sent to clients (Gateway.onUserEvent): `other_id` is the user the topic's owner must stop
 * seeing, and be seen by, at once.
 */
export const USER_BLOCKED = 'social.blocked';
export interface UserBlockedEvent {
  other_id: string;
}

/** What the service publishes on users' own topics. */
type SocialEvent =
  | { t: 'social.friend_request'; d: EventPayloads['social.friend_request'] }
  | { t: 'social.friend_accepted' | 'social.friend_removed'; d: EventPayloads['social.friend_removed'] }
  | { t: typeof USER_BLOCKED; d: UserBlockedEvent };

type Page = { limit: number; cursor?: string | undefined };
type PageOf<Item> = { items: Item[]; next_cursor: string | null };

export interface SocialDeps {
  bus: EventBus;
  privacy: Pick<ProfilesApi, 'privacyOf'>;
  users: Pick<UsersApi, 'usernamesOf'>;
  /** The inbox: requests and acceptances notify their users in the pair's transaction. */
  notifications: Pick<NotificationsApi, 'store' | 'announce'>;
  /**
   * Friend requests and follows per user and window (together), shared by the nodes through
   * Redis: each one may reach the other user, so a flood of request and withdraw cycles is bounded.
   */
  reachLimiter: RateLimiterAbstract;
}

const noSuchUser = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');
const blocked = () =>
  new AppError(ErrorCode.FORBIDDEN, 'A block between you and this user stands in the way.');

/**
 * The canonical id of the other user of a pair: an id that cannot name a user answers 404 like an
 * unknown one; the caller's own id answers 422.
 */
function otherIdOf(callerId: string, userId: string): string {
  if (!isId(userId)) throw noSuchUser();
  const otherId = canonicalId(userId);
  if (otherId === callerId) {
    throw new AppError(ErrorCode.VALIDATION_FAILED, 'You cannot do this to yourself.', {
      errors: [{ path: 'user_id', message: 'must be another user' }],
    });
  }
  return otherId;
}

/** The inbox's word for a new request to `to` (docs/notifications.md). */
const receivedNote = (to: string, from: SocialUser): NotificationRequest => ({
  userId: to,
  code: 'friend_request.received',
  subject: `${from.username} sent you a friend request`,
  content: { user: { id: from.id, username: from.username } },
  senderId: from.id,
});

/** The inbox's word for `by` accepting the request of `to`. */
const acceptedNote = (to: string, by: SocialUser): NotificationRequest => ({
  userId: to,
  code: 'friend_request.accepted',
  subject: `${by.username} accepted your friend request`,
  content: { user: { id: by.id, username: by.username } },
  senderId: by.id,
});

const related = (row: ListRow): RelatedUser => ({
  user: { id: row.id, username: row.username },
  since: row.since.toISOString(),
});

/**
 * The rules of friendships, follows and blocks. Writes about a pair run in one transaction under
 * the pair's lock; events go to the affected users' own topics after it committed.
 */
/**
 * Runs inside the transaction that blocked or unblocked the pair, holding the pair's lock: for
 * other modules' rows that must follow the blocks in the same commit (conversations).
 */
export type PairBlockListener = (data: DataAccess, a: string, b: string) => Promise<void>;

export class SocialService {
  private readonly pairBlockListeners: PairBlockListener[] = [];

  constructor(private readonly deps: SocialDeps) {}

  onPairBlockChange(listener: PairBlockListener): void {
    this.pairBlockListeners.push(listener);
  }

  private async pairBlockChanged(data: DataAccess, a: string, b: string): Promise<void> {
    for (const listener of this.pairBlockListeners) await listener(data, a, b);
  }

  /** Asks `userId` to be friends, or accepts their request when they asked first. */
  async request(ctx: Ctx, userId: string): Promise<{ status: 'pending' | 'accepted' }> {
    await this.spendReach(ctx, userId);
    const outcome = await this.inPair(ctx, userId, async (data, me, them) => {
      if ((await relationsOf(data, me.id, [them.id])).get(them.id)?.blocked) throw blocked();
      const existing = await friendshipBetween(data, me.id, them.id);
      if (existing?.status === 'accepted') throw new AppError(ErrorCode.CONFLICT, 'You are friends already.');
      if (existing?.requester_id === me.id)
        throw new AppError(ErrorCode.CONFLICT, 'Your request to this user is pending already.');
      const now = ctx.now();
      if (existing) await acceptFriendRequest(data, them.id, me.id, now);
      else await insertFriendRequest(data, me.id, them.id, now);
      // Asking back accepts: the first requester is told it was accepted, nobody of a request.
      const notes = await this.deps.notifications.store(
        data,
        [existing ? acceptedNote(them.id, me) : receivedNote(them.id, me)],
        now,
      );
      return { me, them, accepted: existing !== undefined, at: now, notes };
    });
    await this.deps.notifications.announce(outcome.notes, ctx.log);
    if (outcome.accepted) {
      await this.notify(ctx, outcome.them.id, { t: 'social.friend_accepted', d: { user: outcome.me } });
      return { status: 'accepted' };
    }
    await this.notify(ctx, outcome.them.id, {
      t: 'social.friend_request',
      d: { from: outcome.me, created_at: outcome.at.toISOString() },
    });
    return { status: 'pending' };
  }

  async accept(ctx: Ctx, userId: string): Promise<{ status: 'accepted' }> {
    const { me, them, notes } = await this.inPair(ctx, userId, async (data, me, them) => {
      const now = ctx.now();
      if (await acceptFriendRequest(data, them.id, me.id, now))
        return {
          me,
          them,
          notes: await this.deps.notifications.store(data, [acceptedNote(them.id, me)], now),
        };
      if ((await friendshipBetween(data, me.id, them.id))?.status === 'accepted')
        throw new AppError(ErrorCode.CONFLICT, 'You are friends already.');
      throw new AppError(ErrorCode.NOT_FOUND, 'This user has no pending request to you.');
    });
    await this.deps.notifications.announce(notes, ctx.log);
    await this.notify(ctx, them.id, { t: 'social.friend_accepted', d: { user: me } });
    return { status: 'accepted' };
  }

  /** Declining is silent: the requester gets no event, their request only leaves their outgoing list. */
  async decline(ctx: Ctx, userId: string): Promise<void> {
    await this.inPair(ctx, userId, async (data, me, them) => {
      if (!(await deleteFriendRequest(data, them.id, me.id)))
        throw new AppError(ErrorCode.NOT_FOUND, 'This user has no pending request to you.');
    });
  }

  async cancel(ctx: Ctx, userId: string): Promise<void> {
    await this.inPair(ctx, userId, async (data, me, them) => {
      if (!(await deleteFriendRequest(data, me.id, them.id)))
        throw new AppError(ErrorCode.NOT_FOUND, 'You have no pending request to this user.');
    });
  }

  async unfriend(ctx: Ctx, userId: string): Promise<void> {
    const { me, them } = await this.inPair(ctx, userId, async (data, me, them) => {
      if (!(await deleteFriendship(data, me.id, them.id)))
        throw new AppError(ErrorCode.NOT_FOUND, 'This user is not your friend.');
      return { me, them };
    });
    await this.notify(ctx, them.id, { t: 'social.friend_removed', d: { user: me } });
  }

  async follow(ctx: Ctx, userId: string): Promise<void> {
    await this.spendReach(ctx, userId);
    await this.inPair(ctx, userId, async (data, me, them) => {
      if ((await relationsOf(data, me.id, [them.id])).get(them.id)?.blocked) throw blocked();
      await insertFollow(data, me.id, them.id, ctx.now());
    });
  }

  async unfollow(ctx: Ctx, userId: string): Promise<void> {
    await this.inPair(ctx, userId, (data, me, them) => deleteFollow(data, me.id, them.id));
  }

  /**
   * Blocks the user and ends what stood between the two. Both users' nodes drop their presence
   * subscriptions to each other at once; a friend is told the friendship ended, not why.
   */
  async block(ctx: Ctx, userId: string): Promise<void> {
    const { me, them, wereFriends } = await this.inPair(ctx, userId, async (data, me, them) => {
      await insertBlock(data, me.id, them.id, ctx.now());
      await this.pairBlockChanged(data, me.id, them.id);
      return { me, them, ...(await severPair(data, me.id, them.id)) };
    });
    await Promise.all([
      this.notify(ctx, me.id, { t: USER_BLOCKED, d: { other_id: them.id } }),
      this.notify(ctx, them.id, { t: USER_BLOCKED, d: { other_id: me.id } }),
      wereFriends ? this.notify(ctx, them.id, { t: 'social.friend_removed', d: { user: me } }) : undefined,
    ]);
  }

  /** Nothing the block ended comes back: friendships and follows have to be made again. */
  async unblock(ctx: Ctx, userId: string): Promise<void> {
    await this.inPair(ctx, userId, async (data, me, them) => {
      await deleteBlock(data, me.id, them.id);
      await this.pairBlockChanged(data, me.id, them.id);
    });
  }

  async friends(ctx: Ctx, page: Page): Promise<PageOf<RelatedUser>> {
    return this.page(ctx, 'friends', callerOf(ctx).id, page, related);
  }

  async requests(
    ctx: Ctx,
    direction: FriendRequest['direction'],
    page: Page,
  ): Promise<PageOf<FriendRequest>> {
    return this.page(ctx, direction, callerOf(ctx).id, page, (row) => ({
      user: { id: row.id, username: row.username },
      direction,
      created_at: row.since.toISOString(),
    }));
  }

  async blocks(ctx: Ctx, page: Page): Promise<PageOf<RelatedUser>> {
    return this.page(ctx, 'blocks', callerOf(ctx).id, page, related);
  }

  async follows(
    ctx: Ctx,
    list: 'followers' | 'following',
    userId: string,
    page: Page,
  ): Promise<PageOf<RelatedUser>> {
    return this.page(ctx, list, await this.listOwner(ctx, userId), page, related);
  }

  /**
   * Whose follow lists the caller may read: their own, else a user whose profile_visibility
   * allows it (friends: an accepted friendship) and 403 otherwise. A block either way answers
   * 404, as for a user who does not exist.
   */
  private async listOwner(ctx: Ctx, userId: string): Promise<string> {
    const viewer = callerOf(ctx);
    if (!isId(userId)) throw noSuchUser();
    const ownerId = canonicalId(userId);
    if (ownerId === viewer.id) return ownerId;
    const [exists, privacy, relations] = await Promise.all([
      this.deps.users.usernamesOf(ctx.data, [ownerId]),
      this.deps.privacy.privacyOf(ctx.data, [ownerId]),
      relationsOf(ctx.data, viewer.id, [ownerId]),
    ]);
    const relation = relations.get(ownerId);
    if (exists.length === 0 || relation?.blocked) throw noSuchUser();
    // privacyOf answers every id it is given, with the defaults for users who saved no profile.
    const visibility = privacy.get(ownerId)?.profile_visibility ?? 'public';
    if (!privacyAdmits(visibility, relation?.friends === true))
      throw new AppError(ErrorCode.FORBIDDEN, "This user's profile settings hide the list from you.");
    return ownerId;
  }

  private async page<Item>(
    ctx: Ctx,
    list: ListName,
    userId: string,
    page: Page,
    toItem: (row: ListRow) => Item,
  ): Promise<PageOf<Item>> {
    const after = decodeCursor(page.cursor, isTimeIdKey);
    const rows = await listOf(ctx.data, list, userId, { after, limit: page.limit + 1 });
    return pageFrom(rows, page.limit, toItem, (row) => [row.sinceKey, row.id]);
  }

  /**
   * Runs `work` about the caller and the user `userId` in one transaction holding the pair's lock,
   * with both accounts read inside it (`otherIdOf` checks the id first).
   */
  private async inPair<T>(
    ctx: Ctx,
    userId: string,
    work: (data: DataAccess, me: SocialUser, them: SocialUser) => Promise<T>,
  ): Promise<T> {
    const caller = callerOf(ctx);
    const otherId = otherIdOf(caller.id, userId);
    try {
      return await transaction(ctx.data, async (tx) => {
        await lockPair(tx, caller.id, otherId);
        const users = await this.deps.users.usernamesOf(tx, [caller.id, otherId]);
        const me = users.find((user) => user.id === caller.id);
        const them = users.find((user) => user.id === otherId);
        // The token outlived its account by a moment.
        if (!me) throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
        if (!them) throw noSuchUser();
        return await work(tx, me, them);
      });
    } catch (error) {
      // One of the two accounts was deleted after it was read: its rows are gone with it.
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)) throw noSuchUser();
      throw error;
    }
  }

  /**
   * Spends one of the caller's friend requests and follows (429 RATE_LIMITED past the limit), once
   * the target is known to be another user's id, so a refused self-request costs nothing.
   */
  private async spendReach(ctx: Ctx, userId: string): Promise<void> {
    const caller = callerOf(ctx);
    otherIdOf(caller.id, userId);
    await consumeOrThrow(
      this.deps.reachLimiter,
      caller.id,
      'Too many friend requests and follows; wait before making more.',
    );
  }

  /** Tells a user's sockets, on every node. The change is committed: a lost event is logged, not an error. */
  private notify(ctx: Ctx, userId: string, event: SocialEvent): Promise<void> {
    return this.deps.bus.publishCommitted(userTopic(userId), event, ctx.log);
  }
}
