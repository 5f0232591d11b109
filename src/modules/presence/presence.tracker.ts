import type { AuthUser } from '../../platform/auth/access-tokens.js';
import type { Ctx } from '../../platform/context.js';
import type { Gateway, SessionListener } from '../../platform/gateway/gateway.js';
import type { Kv } from '../../platform/kv/kv.js';
import type { Logger } from '../../platform/log.js';
import { toUuidArray } from '../social/relations.js';
import { type PresenceService, type PresenceSightings, presenceKey } from './presence.service.js';

export interface PresenceTrackerDeps {
  kv: Kv;
  gateway: Gateway;
  log: Logger;
  ttlSeconds: number;
  flushIntervalMs: number;
  /** A service context with no caller, for work the node does on its own. */
  systemCtx(): Ctx;
}

/**
 * The per-node side of presence:
 * - last_seen_at writes are coalesced: sightings collect in memory and go to the database in one
 *   statement per flush interval, never one write per heartbeat;
 * - an authenticated socket counts as heartbeating: the node refreshes the TTL of all its
 *   connected users in one batch, a few times per TTL;
 * - a user's last socket on this node closing ends their presence at once; a REST-only user whose
 *   TTL lapsed is announced offline by the node that saw their last heartbeat.
 */
export class PresenceTracker implements SessionListener, PresenceSightings {
  private service!: PresenceService;
  private readonly pendingSeen = new Map<string, Date>();
  /** REST heartbeats this node saw: when each user's TTL lapses unless refreshed. */
  private readonly restExpiry = new Map<string, number>();
  private readonly timers: NodeJS.Timeout[] = [];
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly deps: PresenceTrackerDeps) {}

  /** The tracker and the service refer to each other; the app wires them once. */
  attach(service: PresenceService): void {
    this.service = service;
  }

  recordSeen(userId: string, at: Date): void {
    const previous = this.pendingSeen.get(userId);
    if (!previous || previous < at) this.pendingSeen.set(userId, at);
  }

  watchExpiry(userId: string, now: Date): void {
    this.restExpiry.set(userId, now.getTime() + this.deps.ttlSeconds * 1000);
  }

  start(): void {
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

  async stop(): Promise<void> {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await this.flushLastSeen();
  }

  async connected(user: AuthUser, firstOnThisNode: boolean): Promise<void> {
    if (firstOnThisNode) await this.service.markOnline(this.deps.systemCtx(), user.id);
  }

  async disconnected(userId: string, lastOnThisNode: boolean): Promise<void> {
    if (!lastOnThisNode) return;
    this.restExpiry.delete(userId);
    await this.service.markOffline(this.deps.systemCtx(), userId);
  }

  /** Writes the collected sightings in one statement; a newer value already stored is kept. */
  flushLastSeen(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pendingSeen.size === 0) return;
      const batch = [...this.pendingSeen];
      this.pendingSeen.clear();
      const ids = toUuidArray(batch.map(([id]) => id));
      const times = `{${batch.map(([, at]) => `"${at.toISOString()}"`).join(',')}}`;
      try {
        await this.deps
          .systemCtx()
          .em.getConnection()
          .execute(
            `update users u set last_seen_at = greatest(coalesce(u.last_seen_at, v.seen), v.seen)
             from unnest(?::uuid[], ?::timestamptz[]) as v(id, seen) where u.id = v.id`,
            [ids, times],
          );
      } catch (error) {
        for (const [id, at] of batch) this.recordSeen(id, at);
        throw error;
      }
    });
    return this.flushing;
  }

  private async refreshConnectedUsers(): Promise<void> {
    const userIds = this.deps.gateway.localUserIds();
    if (userIds.length === 0) return;
    const now = new Date();
    await this.deps.kv.msetWithTtl(
      userIds.map((id) => [presenceKey(id), '1'] as const),
      this.deps.ttlSeconds * 1000,
    );
    for (const id of userIds) this.recordSeen(id, now);
  }

  private async announceLapsed(): Promise<void> {
    const now = Date.now();
    const due = [...this.restExpiry].filter(([, at]) => at <= now).map(([id]) => id);
    if (due.length === 0) return;
    const connectedHere = new Set(this.deps.gateway.localUserIds());
    const stillOnline = await this.deps.kv.mget(due.map(presenceKey));
    for (const [index, userId] of due.entries()) {
      this.restExpiry.delete(userId);
      // Refreshed meanwhile by a socket here or a heartbeat elsewhere: whoever saw it last announces the lapse.
      if (connectedHere.has(userId) || stillOnline[index]) continue;
      await this.service.announceLapse(this.deps.systemCtx(), userId);
    }
  }
}
