import { batched } from '../../platform/batcher.js';
import type { AnnouncedWrite, EventBus } from '../../platform/bus.js';
import type { DataAccess } from '../../platform/data-access.js';
import type { Kv, Peeked } from '../../platform/kv/kv.js';
import type { Logger } from '../../platform/log.js';
import type { UsersApi } from '../users/index.js';

/**
 * Status messages are accepted at the rate clients send them and reach the database coalesced:
 * the latest message per user within STATUS_FLUSH_MS goes out in one UPDATE for all users, so a
 * burst never queues behind one commit (and its fsync) per message. Until it is written:
 * - the message is in the KV store under `presence:status:<user>` (written before the call
 *   returns), so any node reads the caller's own write at once, and the flush of every node
 *   writes the newest message across nodes;
 * - this node keeps it in memory too, and puts a batch back when the database refuses it, so a
 *   database outage delays the write instead of refusing the status.
 * A node that dies loses what it had not flushed yet, at most STATUS_FLUSH_MS of messages.
 */
export function pendingStatusKey(userId: string): string {
  return `presence:status:${userId}`;
}

/** A message the database may not hold yet; `message` null is a cleared one. */
export interface PendingStatus {
  message: string | null;
}

/** The KV value: JSON, so a cleared message (null) differs from no pending write (no key). */
export function decodePendingStatus(stored: string | null): PendingStatus | undefined {
  if (stored === null) return undefined;
  try {
    const { m } = JSON.parse(stored) as { m?: unknown };
    return typeof m === 'string' || m === null ? { message: m } : undefined;
  } catch {
    return undefined;
  }
}

export interface StatusMessagesDeps {
  kv: Kv;
  bus: EventBus;
  log: Logger;
  flushMs: number;
  users: Pick<UsersApi, 'writeStatusMessages'>;
  /** A data handle outside any request, for the flush. */
  systemData(): DataAccess;
}

interface Unwritten {
  message: string | null;
  at: Date;
}

/**
 * The KV writes of concurrent status messages share one round trip: one runs at a time, and the
 * messages that came meanwhile (from any of the node's users) go in the next, in their order.
 */
const WRITE_BATCH = { maxSize: 256, maxInFlight: 1 };

export class StatusMessages {
  private readonly unwritten = new Map<string, Unwritten>();
  private flushing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private readonly write: (pending: AnnouncedWrite) => Promise<Peeked>;

  constructor(private readonly deps: StatusMessagesDeps) {
    this.write = batched((writes: readonly AnnouncedWrite[]) => deps.bus.setAndPeek(writes), WRITE_BATCH);
  }

  /**
   * Long enough to outlive every flush that may still write the message (a few intervals, and a
   * database outage of a minute); after that the database holds it.
   */
  private get keyTtlMs(): number {
    return Math.max(60_000, this.deps.flushMs * 10);
  }

  /**
   * Accepts a message; rejects (writing nothing) when the KV store does not answer. In the same
   * round trip it tells whether anyone listens on `listeners.topic` and, when someone does, reads
   * `listeners.readKey` (EventBus.setAndPeek).
   */
  async set(
    userId: string,
    message: string | null,
    at: Date,
    listeners: { topic: string; readKey: string },
  ): Promise<Peeked> {
    const peeked = await this.write({
      key: pendingStatusKey(userId),
      value: JSON.stringify({ m: message }),
      ttlMs: this.keyTtlMs,
      topic: listeners.topic,
      readKey: listeners.readKey,
    });
    this.unwritten.set(userId, { message, at });
    return peeked;
  }

  /**
   * The user's message not written yet, if any, from `stored` (the value of pendingStatusKey, read
   * by the caller batched with its own reads): the KV store's, which is the newest across nodes,
   * else this node's own when the store lost it.
   */
  pending(userId: string, stored: string | null): PendingStatus | undefined {
    const unwritten = this.unwritten.get(userId);
    return decodePendingStatus(stored) ?? (unwritten && { message: unwritten.message });
  }

  start(): void {
    this.timer = setInterval(() => {
      this.flush().catch((err) => this.deps.log.error({ err }, 'writing status messages failed'));
    }, this.deps.flushMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /**
   * Writes the batch in one statement, each user's newest message across nodes (the KV store's,
   * or this node's own when the store lost it). A failed write puts back what was not superseded.
   */
  flush(): Promise<void> {
    const write = async () => {
      if (this.unwritten.size === 0) return;
      const batch = [...this.unwritten];
      this.unwritten.clear();
      const newest = await this.deps.kv
        .mget(batch.map(([userId]) => pendingStatusKey(userId)))
        .catch(() => batch.map(() => null));
      try {
        await this.deps.users.writeStatusMessages(
          this.deps.systemData(),
          batch.map(([userId, { message, at }], index) => {
            const stored = decodePendingStatus(newest[index] ?? null);
            return { userId, message: stored ? stored.message : message, at };
          }),
        );
      } catch (error) {
        for (const [userId, unwritten] of batch) {
          if (!this.unwritten.has(userId)) this.unwritten.set(userId, unwritten);
        }
        throw error;
      }
    };
    this.flushing = this.flushing.then(write, write);
    return this.flushing;
  }
}
