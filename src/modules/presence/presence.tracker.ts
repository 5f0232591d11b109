import type { AuthUser } from '../../platform/auth/access-tokens.js';
import type { Ctx } from '../../platform/context.js';
import type { Gateway } from '../../platform/gateway/gateway.js';
import type { SessionListener } from '../../platform/gateway/sessions.js';
import type { Kv } from '../../platform/kv/kv.js';
import type { Logger } from '../../platform/log.js';
import type { UsersApi } from '../users/index.js';
import { NodeLease } from './node-lease.js';
import { type PresenceService, type PresenceSightings, presenceKey } from './presence.service.js';

export interface PresenceTrackerDeps {
  kv: Kv;
  gateway: Gateway;
  log: Logger;
  ttlSeconds: number;
  flushIntervalMs: number;
  /** How long this node's lease lasts without renewal before another node takes its users over. */
  leaseSeconds: number;
  /** A service context with no caller, for work the node does on its own. */
  systemCtx(): Ctx;
  /** Where the coalesced sightings are written. */
  users: Pick<UsersApi, 'writeLastSeen'>;
}

/**
 * The per-node side of presence:
 * - last_seen_at writes are coalesced: sightings collect in memory and go to the database in one
 *   statement per flush interval, never one write per heartbeat;
 * - an authenticated socket counts as heartbeating: the node refreshes the TTL of all its
 *   connected users in one batch, a few times per TTL;
 * - a user's last socket on this node closing ends their presence at once; a REST-only user whose
 *   TTL lapsed is announced offline by the node that saw their last heartbeat;
 * - the node holds a lease (NodeLease), so when it dies without closing its sockets another node
 *   ends its users' presence within seconds instead of leaving them online for the TTL.
 */
export class PresenceTracker implements SessionListener, PresenceSightings {
  private service!: PresenceService;
  private readonly pendingSeen = new Map<string, Date>();
  /** REST heartbeats this node saw: the last one per user, whose TTL lapses unless refreshed. */
  private readonly restHeartbeats = new Map<string, Date>();
  private readonly timers: NodeJS.Timeout[] = [];
  private flushing: Promise<void> = Promise.resolve();
  /** Offline work of sockets that closed, which shutdown waits for before giving up the lease. */
  private readonly departures = new Set<Promise<void>>();
  readonly lease: NodeLease;

  constructor(private readonly deps: PresenceTrackerDeps) {
    this.lease = new NodeLease({
      kv: deps.kv,
      log: deps.log,
      leaseSeconds: deps.leaseSeconds,
      localUserIds: () => deps.gateway.localUserIds(),
      endPresence: (userId, lastSeen) => this.service.markOffline(deps.systemCtx(), userId, lastSeen),
      lapsed: () => this.refreshConnectedUsers(),
    });
  }

  /** The tracker and the service refer to each other; the app wires them once. */
  attach(service: PresenceService): void {
    this.service = service;
  }

  recordSeen(userId: string, at: Date): void {
    const previous = this.pendingSeen.get(userId);
    if (!previous || previous < at) this.pendingSeen.set(userId, at);
  }

  watchExpiry(userId: string, now: Date): void {
    this.restHeartbeats.set(userId, now);
  }

  /** A sighting this node has not written to the database yet. */
  pendingSighting(userId: string): Date | undefined {
    return this.pendingSeen.get(userId);
  }

  keepsOnline(userId: string): boolean {
    return this.deps.gateway.isLocalUser(userId);
  }

  /** Takes the node lease (rejecting when the KV store does not answer) and starts the timers. */
  async start(): Promise<void> {
    await this.lease.start();
    const { ttlSeconds, flushIntervalMs } = this.deps;
    const every = (ms: number, task: () => Promise<void>) => {
      const timer = setInterval(() => {
        task().catch((err) => this.deps.log.error({ err }, 'presence background task failed'));
      }, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(flushIntervalMs, () => this.flushLastSeen());
    every(Math.max(1000, (ttlSeconds * 1000) / 3), () => this.refreshConnectedUsers());
    every(Math.max(250, Math.min(1000, (ttlSeconds * 1000) / 4)), () => this.announceLapsed());
  }

  /**
   * Stops the timers, gives up the lease once the offline work of the sockets that just closed is
   * done (bounded, and never throwing), then writes the last sightings.
   */
  async stop(): Promise<void> {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await this.lease.stop(Promise.allSettled(this.departures));
    await this.flushLastSeen();
  }

  async connected(user: AuthUser, firstOnThisNode: boolean): Promise<void> {
    if (!firstOnThisNode) return;
    // Both commands leave in the same tick, so on Redis they share one round trip (auto-pipelining).
    await Promise.all([this.service.markOnline(this.deps.systemCtx(), user.id), this.lease.joined(user.id)]);
  }

  disconnected(userId: string, lastOnThisNode: boolean): Promise<void> {
    if (!lastOnThisNode) return Promise.resolve();
    this.restHeartbeats.delete(userId);
    // Issued together, in the order a quick reconnect's own commands will follow them.
    const departure = Promise.all([
      this.service.markOffline(this.deps.systemCtx(), userId),
      this.lease.left(userId),
    ]).then(() => {});
    this.departures.add(departure);
    const forget = () => this.departures.delete(departure);
    departure.then(forget, forget);
    return departure;
  }

  /**
   * Writes the collected sightings in one statement; a newer value already stored is kept. A
   * failed write puts its batch back, and the next flush runs whether or not this one failed.
   */
  flushLastSeen(): Promise<void> {
    const write = async () => {
      if (this.pendingSeen.size === 0) return;
      const batch = [...this.pendingSeen];
      this.pendingSeen.clear();
      try {
        await this.deps.users.writeLastSeen(this.deps.systemCtx().data, batch);
      } catch (error) {
        for (const [id, at] of batch) this.recordSeen(id, at);
        throw error;
      }
    };
    this.flushing = this.flushing.then(write, write);
    return this.flushing;
  }

  /**
   * Keeps this node's connected users online. A key that vanished meanwhile (another node saw the
   * user's last socket there close) is restored through markOnline, so subscribers hear `online`
   * again instead of being left with a stale `offline`.
   */
  private async refreshConnectedUsers(): Promise<void> {
    const userIds = this.deps.gateway.localUserIds();
    if (userIds.length === 0) return;
    const now = new Date();
    const kept = await this.deps.kv.expireMany(userIds.map(presenceKey), this.deps.ttlSeconds * 1000);
    const vanished = userIds.filter((_, index) => !kept[index]);
    for (const id of userIds) this.recordSeen(id, now);
    for (const id of vanished) await this.service.markOnline(this.deps.systemCtx(), id, now);
  }

  private async announceLapsed(): Promise<void> {
    const lapsedBefore = Date.now() - this.deps.ttlSeconds * 1000;
    const due = [...this.restHeartbeats].filter(([, at]) => at.getTime() <= lapsedBefore);
    if (due.length === 0) return;
    const stillOnline = await this.deps.kv.mget(due.map(([id]) => presenceKey(id)));
    for (const [index, [userId, lastHeartbeat]] of due.entries()) {
      this.restHeartbeats.delete(userId);
      // Refreshed meanwhile by a socket here or a heartbeat elsewhere: whoever saw it last announces the lapse.
      if (this.keepsOnline(userId) || stillOnline[index]) continue;
      await this.service.announceLapse(this.deps.systemCtx(), userId, lastHeartbeat);
    }
  }
}
