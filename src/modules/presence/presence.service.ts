import { setTimeout as sleep } from 'node:timers/promises';
import { type PresenceStatus, STATUS_MESSAGE_MAX } from '../../../protocol/presence.js';
import { characterCount } from '../../../protocol/storable-text.js';
import type { EventAudience, EventBus } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { Kv } from '../../platform/kv/kv.js';
import { shownText } from '../../platform/trimmed-text.js';
import type { ProfilesApi } from '../profiles/index.js';
import { privacyAdmits, type Relation, type SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import { type PendingStatus, pendingStatusKey, type StatusMessages } from './status-messages.js';

type Audience = NonNullable<EventAudience['visibility']>;

/** What the caller may know of one queried user. */
export interface PresenceView {
  /** False for an id that names no account: its status is `unknown`. */
  exists: boolean;
  /** False when the user is unknown or hides their presence from the caller (who then sees `offline`). */
  visible: boolean;
  /** Decides, per event, whether the caller may receive it (for subscriptions). */
  mayReceive: (audience: EventAudience | undefined) => boolean;
}

/**
 * The user is online while this key exists. Its value is the time (epoch ms) of the heartbeat or
 * connection that last set it, so any node can tell a sighting the database does not have yet.
 */
export function presenceKey(userId: string): string {
  return `presence:online:${userId}`;
}

export function presenceTopic(userId: string): string {
  return `presence:${userId}`;
}

/**
 * The viewer sees the target's presence when it is the target, or when no block stands between
 * them and the target's presence_visibility allows it (friends: an accepted friendship).
 */
export function canSeePresence(
  viewerId: string,
  targetId: string,
  visibility: Audience,
  relation: Relation,
): boolean {
  if (viewerId === targetId) return true;
  if (relation.blocked) return false;
  return privacyAdmits(visibility, relation.friends);
}

/** Waits before each new try of a failed presence announcement: about two minutes in all. */
const REANNOUNCE_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 15_000, 30_000, 60_000];

/** The node-level bookkeeping the rules feed (implemented by PresenceTracker). */
export interface PresenceSightings {
  /** Records a sighting for the coalesced last_seen_at write. */
  recordSeen(userId: string, at: Date): void;
  /** Remembers a heartbeat so the lapse of its TTL can be announced. */
  watchExpiry(userId: string, at: Date): void;
  /** A sighting recorded on this node and not written to the database yet. */
  pendingSighting(userId: string): Date | undefined;
  /** Whether this node holds a socket of the user, and so keeps their presence key alive itself. */
  keepsOnline(userId: string): boolean;
}

export interface PresenceServiceDeps {
  kv: Kv;
  bus: EventBus;
  ttlSeconds: number;
  sightings: PresenceSightings;
  statusMessages: StatusMessages;
  privacy: Pick<ProfilesApi, 'privacyOf'>;
  relations: Pick<SocialApi, 'relationsOf'>;
  users: Pick<UsersApi, 'existingUserIds' | 'storedStatusMessage'>;
}

/**
 * Presence rules: a heartbeat marks the user online for the TTL; when it lapses the user is
 * offline and last_seen_at remains. Lookups and events honour presence_visibility and blocks.
 */
export class PresenceService {
  /** Users whose failed presence announcement is being tried again. */
  private readonly reannouncing = new Set<string>();
  /** Told of each user whose presence this node ended (`onWentOffline`). */
  private readonly offlineListeners: ((userId: string) => Promise<unknown>)[] = [];

  constructor(private readonly deps: PresenceServiceDeps) {}

  get ttlSeconds(): number {
    return this.deps.ttlSeconds;
  }

  /**
   * A user with a socket on this node is online for as long as it is open (the node refreshes
   * their key and ends their presence when it closes), so their heartbeat, on the socket or over
   * REST, adds only the sighting: no KV round trip. Other nodes read that sighting once it is
   * flushed (LAST_SEEN_FLUSH_MS) rather than from the presence key at once.
   */
  async heartbeat(ctx: Ctx): Promise<{ status: 'online'; ttl_seconds: number; last_seen_at: string }> {
    const caller = callerOf(ctx);
    const now = ctx.now();
    if (this.deps.sightings.keepsOnline(caller.id)) this.deps.sightings.recordSeen(caller.id, now);
    else {
      await this.markOnline(ctx, caller.id, now);
      this.deps.sightings.watchExpiry(caller.id, now);
    }
    return { status: 'online', ttl_seconds: this.deps.ttlSeconds, last_seen_at: now.toISOString() };
  }

  /** Refreshes the TTL; the transition from offline publishes an online event. */
  async markOnline(ctx: Ctx, userId: string, now = ctx.now()): Promise<void> {
    const cameOnline =
      (await this.deps.kv.swap(presenceKey(userId), String(now.getTime()), this.deps.ttlSeconds * 1000)) ===
      null;
    this.deps.sightings.recordSeen(userId, now);
    if (cameOnline) await this.publish(ctx, userId, 'online');
  }

  /**
   * Ends presence now (the user's last connection here closed, or their dead node's survivor ends
   * it) and tells subscribers. The listeners hear it even when the key was gone already: a
   * takeover retried after a survivor died midway tells them what that one may not have.
   */
  async markOffline(ctx: Ctx, userId: string, now = ctx.now()): Promise<void> {
    this.deps.sightings.recordSeen(userId, now);
    const deleted = await this.deps.kv.del(presenceKey(userId));
    // After the delete, never with it: a listener reading presence at once must find it gone.
    await this.wentOffline(ctx, userId);
    if (deleted > 0) await this.publish(ctx, userId, 'offline', now);
  }

  /** The TTL lapsed without a heartbeat: the key is already gone, subscribers still need to hear it. */
  async announceLapse(ctx: Ctx, userId: string, lastSeen: Date): Promise<void> {
    await this.wentOffline(ctx, userId);
    await this.publish(ctx, userId, 'offline', lastSeen);
  }

  /** Adds a listener told of each user whose presence this node ends (PresenceApi.onWentOffline). */
  onWentOffline(listener: (userId: string) => Promise<unknown>): void {
    this.offlineListeners.push(listener);
  }

  /** Tells the listeners; one that fails is logged, and neither the others nor presence wait on it. */
  private async wentOffline(ctx: Ctx, userId: string): Promise<void> {
    await Promise.all(
      this.offlineListeners.map((listener) =>
        listener(userId).catch((err: unknown) =>
          ctx.log.warn({ err, userId }, 'a listener of presence ending could not be told'),
        ),
      ),
    );
  }

  /**
   * What the database may not hold yet of the user, in one KV round trip: the latest sighting
   * (the one this node has still to flush, or the one stored in the presence key by whichever node
   * saw the user) and a status message set but not written yet.
   */
  async unflushed(userId: string): Promise<{ lastSeen: Date | null; statusMessage?: PendingStatus }> {
    const [seen, status] = await this.deps.kv.mget([presenceKey(userId), pendingStatusKey(userId)]);
    const stored = Number(seen);
    const pending = this.deps.sightings.pendingSighting(userId)?.getTime() ?? 0;
    const latest = Math.max(Number.isFinite(stored) ? stored : 0, pending);
    const statusMessage = this.deps.statusMessages.pending(userId, status ?? null);
    return { lastSeen: latest > 0 ? new Date(latest) : null, ...(statusMessage ? { statusMessage } : {}) };
  }

  /**
   * Which of these users are online now, in one KV round trip, whatever their presence_visibility:
   * for other modules' rules (a party's offline members), never shown to another user as it is.
   */
  async onlineAmong(userIds: readonly string[]): Promise<Set<string>> {
    if (userIds.length === 0) return new Set();
    const keys = await this.deps.kv.mget(userIds.map(presenceKey));
    return new Set(userIds.filter((_, index) => keys[index] !== null));
  }

  async lookup(ctx: Ctx, userIds: readonly string[]): Promise<Record<string, PresenceStatus>> {
    return this.statuses(await this.views(ctx, userIds));
  }

  /**
   * What the caller may know of each id, with a per-event filter for subscriptions. The statuses
   * are read separately (`statuses`), so a subscriber can start listening before it reads them
   * and miss no change in between. UUIDs are keyed in lower case, whatever case the caller used.
   */
  async views(ctx: Ctx, userIds: readonly string[]): Promise<Map<string, PresenceView>> {
    const viewer = callerOf(ctx);
    const unique = [...new Set(userIds.map(canonicalId))];
    const unknown: PresenceView = { exists: false, visible: false, mayReceive: () => false };
    const views = new Map<string, PresenceView>(unique.map((id) => [id, unknown]));
    const candidates = unique.filter(isId);
    if (candidates.length === 0) return views;
    const existing = await this.deps.users.existingUserIds(ctx.data, candidates);
    const [privacy, relations] = await Promise.all([
      this.deps.privacy.privacyOf(ctx.data, existing),
      this.deps.relations.relationsOf(ctx.data, viewer.id, existing),
    ]);
    for (const id of existing) {
      const relation = relations.get(id) ?? { friends: false, blocked: false };
      const visibility = privacy.get(id)?.presence_visibility ?? 'everyone';
      views.set(id, {
        exists: true,
        visible: canSeePresence(viewer.id, id, visibility, relation),
        // Events carry the subject's visibility at the time they happen, so a later change applies at once.
        mayReceive: (audience) => canSeePresence(viewer.id, id, audience?.visibility ?? 'nobody', relation),
      });
    }
    return views;
  }

  /** Which of the users are online now, whatever their presence_visibility (rules of other modules). */
  async online(userIds: readonly string[]): Promise<Set<string>> {
    const ids = [...new Set(userIds.map(canonicalId))];
    const online = ids.length === 0 ? [] : await this.deps.kv.mget(ids.map(presenceKey));
    return new Set(ids.filter((_, index) => online[index] !== null));
  }

  /** The current status behind each view: unknown, offline when hidden, else what the KV store says. */
  async statuses(views: ReadonlyMap<string, PresenceView>): Promise<Record<string, PresenceStatus>> {
    const visible = [...views].filter(([, view]) => view.visible).map(([id]) => id);
    const online = await this.deps.kv.mget(visible.map(presenceKey));
    const onlineIds = new Set(visible.filter((_, index) => online[index] !== null));
    return Object.fromEntries(
      [...views].map(([id, view]) => [
        id,
        view.exists ? (onlineIds.has(id) ? 'online' : 'offline') : 'unknown',
      ]),
    );
  }

  /**
   * Sets (or, when nothing visible is left after trimming, clears) the caller's status message,
   * without bidirectional controls as chat bodies (shownText), and tells subscribers at once; the
   * database gets it coalesced (StatusMessages).
   */
  async setStatus(ctx: Ctx, statusMessage: string): Promise<{ status_message: string | null }> {
    const caller = callerOf(ctx);
    const trimmed = shownText(statusMessage);
    if (characterCount(trimmed) > STATUS_MESSAGE_MAX) {
      throw new AppError(
        ErrorCode.VALIDATION_FAILED,
        `The status message is over ${STATUS_MESSAGE_MAX} characters.`,
        {
          errors: [
            {
              path: 'status_message',
              message: `must be at most ${STATUS_MESSAGE_MAX} characters after trimming`,
            },
          ],
        },
      );
    }
    const value = trimmed === '' ? null : trimmed;
    // One round trip, one step: the message stored, then whether anyone listens and only then the
    // caller's presence. A subscriber counted after the write reads the new message (see publish).
    const { listened, value: presence } = await this.deps.statusMessages.set(caller.id, value, ctx.now(), {
      topic: presenceTopic(caller.id),
      readKey: presenceKey(caller.id),
    });
    if (listened) {
      await this.announce(ctx, caller.id, presence !== null ? 'online' : 'offline', undefined, {
        message: value,
      });
    }
    return { status_message: value };
  }

  /**
   * Tells the user's presence subscribers, if any: with nobody listening on any node (most users
   * coming online have no subscribed friend), the event is neither built nor read from the
   * database. A subscriber listens before it reads the status, so none misses a change.
   */
  private async publish(
    ctx: Ctx,
    userId: string,
    status: 'online' | 'offline',
    lastSeen?: Date,
  ): Promise<void> {
    try {
      if (await this.deps.bus.hasSubscribers(presenceTopic(userId)))
        await this.announce(ctx, userId, status, lastSeen);
    } catch (error) {
      // The KV store holds the new state, so a retry of the request changes nothing and would
      // announce nothing: subscribers would keep the old status for good.
      void this.announceAgainLater(ctx, userId);
      throw error;
    }
  }

  /**
   * After a failed announcement (the database or Redis down), announces the user's status as it
   * is then, retrying with backoff until one goes out (REANNOUNCE_DELAYS_MS); one chain per user.
   */
  private async announceAgainLater(ctx: Ctx, userId: string): Promise<void> {
    if (this.reannouncing.has(userId)) return;
    this.reannouncing.add(userId);
    try {
      for (const delay of REANNOUNCE_DELAYS_MS) {
        await sleep(delay, undefined, { ref: false });
        try {
          // No status of its own: announce reads the one the user has by then.
          if (await this.deps.bus.hasSubscribers(presenceTopic(userId))) await this.announce(ctx, userId);
          return;
        } catch {
          // Still down: wait longer.
        }
      }
      ctx.log.warn(
        { userId },
        'a presence change could not be announced; subscribers may show an old status',
      );
    } finally {
      this.reannouncing.delete(userId);
    }
  }

  /**
   * Builds and publishes the event for the user's subscribers, who are known to exist. `status`
   * is the change that started it, with `lastSeen` for an offline one; none for a re-announcement.
   */
  private async announce(
    ctx: Ctx,
    userId: string,
    status?: 'online' | 'offline',
    lastSeen?: Date,
    known?: PendingStatus,
  ): Promise<void> {
    const [statusMessage, privacy] = await Promise.all([
      known ? known.message : this.currentStatusMessage(ctx, userId),
      this.deps.privacy.privacyOf(ctx.data, [userId]),
    ]);
    if (statusMessage === undefined) return;
    // The reads take a while, and another node may change the status meanwhile (a survivor ending
    // a dead node's user while the user's new node restores them): the event tells the status as
    // it is when it goes out, so an announcement that lost that race never has the last word.
    const current = (await this.deps.kv.get(presenceKey(userId))) !== null ? 'online' : 'offline';
    const seen = current === status ? lastSeen : this.deps.sightings.pendingSighting(userId);
    await this.deps.bus.publish(presenceTopic(userId), {
      t: 'presence',
      d: {
        user_id: userId,
        status: current,
        status_message: statusMessage,
        ...(current === 'offline' && seen ? { last_seen_at: seen.toISOString() } : {}),
      },
      audience: { subject: userId, visibility: privacy.get(userId)?.presence_visibility ?? 'everyone' },
    });
  }

  /** The newest status message: one not written yet, else the stored one; undefined for no account. */
  private async currentStatusMessage(ctx: Ctx, userId: string): Promise<string | null | undefined> {
    const pending = this.deps.statusMessages.pending(
      userId,
      await this.deps.kv.get(pendingStatusKey(userId)),
    );
    return pending ? pending.message : this.deps.users.storedStatusMessage(ctx.data, userId);
  }
}
