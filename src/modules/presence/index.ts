import { presenceHeartbeat, presenceQuery, presenceStatus } from '../../../protocol/presence.js';
import type { Ctx } from '../../platform/context.js';
import { canonicalId } from '../../platform/ids.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import type { ProfilesApi } from '../profiles/index.js';
import { type SocialApi, USER_BLOCKED, type UserBlockedEvent } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import { presenceFrames } from './presence.frames.js';
import { PresenceService, presenceTopic } from './presence.service.js';
import { PresenceTracker } from './presence.tracker.js';
import { type PendingStatus, StatusMessages } from './status-messages.js';

/** What other modules (and operators' tests) may use of presence. */
export interface PresenceApi {
  /**
   * What the database may not hold yet of the user: the newest sighting on any node, and a
   * status message set but not written yet (absent when none is pending).
   */
  unflushed(userId: string): Promise<{ lastSeen: Date | null; statusMessage?: PendingStatus }>;
  /**
   * Which of these users are online now (the presence store), whatever their presence_visibility:
   * for rules that act on presence (parties remove their offline members), not for showing it.
   */
  onlineAmong(userIds: readonly string[]): Promise<Set<string>>;
  /**
   * Calls `listener` each time this node ends a user's presence: their last socket here closed,
   * their REST heartbeat's TTL lapsed unrefreshed (told by the node that saw that heartbeat), or a
   * dead node's survivor ended it. After the presence key is gone, so the user reads offline then.
   * Not told: a lapse whose heartbeat's node died first, and a key the KV store lost. A listener's
   * failure is logged and delays nothing else.
   */
  onWentOffline(listener: (userId: string) => Promise<unknown>): void;
  /** Writes the coalesced last_seen_at sightings now instead of at the next interval. */
  flushLastSeen(): Promise<void>;
  /** Writes the coalesced status messages now instead of at the next interval. */
  flushStatusMessages(): Promise<void>;
  /** This node's id in the presence lease registry. */
  readonly nodeId: string;
  /** Which of these node ids hold a current lease (this node's does): the others are dead. */
  aliveNodes(nodeIds: readonly string[]): Promise<Set<string>>;
  /** Which of these users are online now (the presence store), whatever their presence_visibility. */
  online(userIds: readonly string[]): Promise<Set<string>>;
  /** Whether the caller may see the user's presence (presence_visibility and blocks). */
  visibleTo(ctx: Ctx, userId: string): Promise<boolean>;
}

/**
 * Online status, status messages and last_seen_at: heartbeats over REST or the socket, batch
 * lookups, and presence events to subscribers who may see them.
 */
export const presenceModule = defineModule({
  name: 'presence',
  tables: [],
  needs: ['users', 'profiles', 'social'],
  setup(
    { config, kv, bus, gateway, log, ctx },
    deps: { users: UsersApi; profiles: ProfilesApi; social: SocialApi },
  ) {
    const tracker = new PresenceTracker({
      kv,
      gateway,
      log,
      ttlSeconds: config.PRESENCE_TTL_SECONDS,
      flushIntervalMs: config.LAST_SEEN_FLUSH_MS,
      leaseSeconds: config.NODE_LEASE_SECONDS,
      systemCtx: () => ctx({ user: null, log, ip: 'internal' }),
      users: deps.users,
    });
    const statusMessages = new StatusMessages({
      kv,
      bus,
      log,
      flushMs: config.STATUS_FLUSH_MS,
      users: deps.users,
      systemData: () => ctx({ user: null, log, ip: 'internal' }).data,
    });
    const presence = new PresenceService({
      kv,
      bus,
      ttlSeconds: config.PRESENCE_TTL_SECONDS,
      sightings: tracker,
      statusMessages,
      privacy: deps.profiles,
      relations: deps.social,
      users: deps.users,
    });
    tracker.attach(presence);
    // Sockets per user are counted across the nodes whose lease is current: a killed node's go.
    gateway.useNodeLiveness(tracker.lease);
    // Subscription filters keep the relation they were decided with, so a new block ends the two
    // users' subscriptions to each other on every node at once instead of at the next subscribe.
    gateway.onUserEvent(USER_BLOCKED, (connection, event) =>
      gateway.unsubscribe(connection, [presenceTopic((event.d as UserBlockedEvent).other_id)]),
    );
    const api: PresenceApi = {
      unflushed: (userId) => presence.unflushed(userId),
      onlineAmong: (userIds) => presence.onlineAmong(userIds),
      onWentOffline: (listener) => presence.onWentOffline(listener),
      flushLastSeen: () => tracker.flushLastSeen(),
      flushStatusMessages: () => statusMessages.flush(),
      nodeId: tracker.lease.nodeId,
      aliveNodes: (nodeIds) => tracker.lease.alive(nodeIds),
      online: (userIds) => presence.online(userIds),
      visibleTo: async (ctx, userId) =>
        (await presence.views(ctx, [userId])).get(canonicalId(userId))?.visible ?? false,
    };
    return {
      api,
      sessions: tracker,
      start: async () => {
        await tracker.start();
        statusMessages.start();
      },
      stop: async () => {
        await tracker.stop();
        await statusMessages.stop();
      },
      operations: [
        serve(presenceHeartbeat, (ctx) => presence.heartbeat(ctx)),
        serve(presenceQuery, async (ctx, { user_ids }) => ({
          presence: await presence.lookup(ctx, user_ids),
        })),
        serve(presenceStatus, (ctx, { status_message }) => presence.setStatus(ctx, status_message)),
        ...presenceFrames({ presence, gateway }),
      ],
    };
  },
});
