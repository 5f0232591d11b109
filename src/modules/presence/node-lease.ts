import { randomUUID } from 'node:crypto';
import type { Kv } from '../../platform/kv/kv.js';
import type { Logger } from '../../platform/log.js';

/** The ids of every node that holds, or held, a lease: where survivors look for dead nodes. */
export const NODE_REGISTRY_KEY = 'presence:nodes';

export function nodeLeaseKey(nodeId: string): string {
  return `presence:node:${nodeId}:lease`;
}

/** The users with at least one authenticated socket on the node. */
export function nodeUsersKey(nodeId: string): string {
  return `presence:node:${nodeId}:users`;
}

/** Held by the survivor taking a dead node over; it lapses, so another retries if that one dies too. */
export function nodeClaimKey(nodeId: string): string {
  return `presence:node:${nodeId}:claim`;
}

/** Members per SADD, so re-adding a large node's users never builds one enormous argument list. */
const SADD_BATCH = 1000;
/** Dead users ended at once during a takeover: parallel enough to be quick, bounded for the database. */
const TAKEOVER_CONCURRENCY = 50;

export interface NodeLeaseDeps {
  kv: Kv;
  log: Logger;
  leaseSeconds: number;
  /** Users with a socket on this node now. */
  localUserIds(): string[];
  /** Ends the presence of a dead node's user who has no socket on any live node, and announces it. */
  endPresence(userId: string, lastSeen: Date): Promise<void>;
  /** This node found its own lease lapsed (a long pause): a survivor may have ended its users' presence. */
  lapsed(): Promise<void>;
}

/**
 * A node's claim to be alive, so that a node killed without a goodbye (kill -9, a lost machine)
 * does not leave its users online until their presence TTL lapses with nobody announcing it.
 *
 * Each process has a random node id, a lease key with a short TTL renewed every third of it, and
 * a set of its connected users; the registry lists the node ids. Every node checks the registry
 * at each renewal. A node whose lease is gone is dead: one survivor (the one whose NX claim
 * succeeds) ends the presence of each of its users not connected to a live node, then removes
 * the dead node's records. The claim expires, so if that survivor dies mid-way another one retries.
 */
export class NodeLease {
  readonly nodeId = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private renewing: Promise<void> | undefined;
  private reaping: Promise<void> | undefined;

  constructor(private readonly deps: NodeLeaseDeps) {}

  private get leaseMs(): number {
    return this.deps.leaseSeconds * 1000;
  }

  /** Takes the lease (rejecting when the KV store does not answer) and keeps renewing it. */
  async start(): Promise<void> {
    await this.renew();
    this.timer = setInterval(() => this.tick(), this.leaseMs / 3);
    this.timer.unref();
  }

  /** The ids among these whose lease is current (this node's counts as current). */
  async alive(nodeIds: readonly string[]): Promise<Set<string>> {
    const others = nodeIds.filter((id) => id !== this.nodeId);
    const leases = others.length > 0 ? await this.deps.kv.mget(others.map(nodeLeaseKey)) : [];
    const alive = new Set(others.filter((_, i) => leases[i] !== null));
    if (nodeIds.includes(this.nodeId)) alive.add(this.nodeId);
    return alive;
  }

  /** The user's first socket on this node opened. */
  joined(userId: string): Promise<number> {
    return this.deps.kv.sadd(nodeUsersKey(this.nodeId), userId);
  }

  /** The user's last socket on this node closed. */
  left(userId: string): Promise<number> {
    return this.deps.kv.srem(nodeUsersKey(this.nodeId), userId);
  }

  /**
   * Stops renewing and, once `departed` settles (the offline work of the sockets that just
   * closed), removes the node's records if every user has left. Otherwise they are kept and the
   * lease lapses, so a survivor ends the remaining users' presence as it would for a crashed node.
   * The same happens when the KV store does not answer within one lease: this never fails or
   * holds up a shutdown for longer, it logs a warning.
   */
  async stop(departed: Promise<unknown> = Promise.resolve()): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    let timer: NodeJS.Timeout | undefined;
    const lapse = new Promise<'lapsed'>((resolve) => {
      timer = setTimeout(() => resolve('lapsed'), this.leaseMs);
    });
    try {
      if ((await Promise.race([this.release(departed), lapse])) === 'lapsed') {
        this.deps.log.warn({ node: this.nodeId }, 'gave up releasing the node lease; it lapses on its own');
      }
    } catch (err) {
      this.deps.log.warn(
        { err, node: this.nodeId },
        'could not release the node lease; it lapses on its own',
      );
    } finally {
      clearTimeout(timer);
    }
  }

  private async release(departed: Promise<unknown>): Promise<void> {
    await Promise.allSettled([departed, this.renewing, this.reaping]);
    if (!this.started) return;
    const { kv, log } = this.deps;
    const remaining = await kv.smembers(nodeUsersKey(this.nodeId));
    if (remaining.length > 0) {
      log.warn({ node: this.nodeId, users: remaining.length }, 'leaving users to a surviving node');
      return;
    }
    await kv.del(nodeLeaseKey(this.nodeId));
    await kv.srem(NODE_REGISTRY_KEY, this.nodeId);
  }

  /** One renewal and, unless the previous one still runs, one look for dead nodes. */
  private tick(): void {
    const fail = (err: unknown) => this.deps.log.error({ err }, 'node lease task failed');
    // A slow takeover must not hold up the renewal, or this node would look dead too.
    this.renewing ??= this.renew()
      .catch(fail)
      .finally(() => {
        this.renewing = undefined;
      });
    this.reaping ??= this.reapDeadNodes()
      .catch(fail)
      .finally(() => {
        this.reaping = undefined;
      });
  }

  private async renew(): Promise<void> {
    const { kv, log } = this.deps;
    const held = await kv.swap(nodeLeaseKey(this.nodeId), new Date().toISOString(), this.leaseMs);
    if (held !== null) return;
    // The first renewal, or the lease lapsed during a pause and a survivor may have removed this
    // node's records: they are written again from what the node holds now.
    await kv.sadd(NODE_REGISTRY_KEY, this.nodeId);
    const users = this.deps.localUserIds();
    for (let start = 0; start < users.length; start += SADD_BATCH) {
      await kv.sadd(nodeUsersKey(this.nodeId), ...users.slice(start, start + SADD_BATCH));
    }
    if (this.started) {
      log.warn({ node: this.nodeId }, 'the lease of this node had lapsed; it registered again');
      await this.deps.lapsed();
    }
    this.started = true;
  }

  private async reapDeadNodes(): Promise<void> {
    const { kv } = this.deps;
    const others = (await kv.smembers(NODE_REGISTRY_KEY)).filter((id) => id !== this.nodeId);
    if (others.length === 0) return;
    const leases = await kv.mget(others.map(nodeLeaseKey));
    const live = others.filter((_, index) => leases[index] !== null);
    for (const nodeId of others.filter((_, index) => leases[index] === null)) {
      const claimed = await kv.set(nodeClaimKey(nodeId), this.nodeId, {
        ttlMs: this.leaseMs * 3,
        onlyIfAbsent: true,
      });
      if (claimed) await this.takeOver(nodeId, live);
    }
  }

  private async takeOver(deadId: string, liveIds: readonly string[]): Promise<void> {
    const { kv, log } = this.deps;
    const users = await kv.smembers(nodeUsersKey(deadId));
    const connected = new Set(this.deps.localUserIds());
    for (const members of await Promise.all(liveIds.map((id) => kv.smembers(nodeUsersKey(id))))) {
      for (const userId of members) connected.add(userId);
    }
    const orphans = users.filter((userId) => !connected.has(userId));
    // The lease lapsed, so the dead node last renewed it, its last sign of life, a lease ago or earlier.
    const lastSeen = new Date(Date.now() - this.leaseMs);
    for (let start = 0; start < orphans.length; start += TAKEOVER_CONCURRENCY) {
      const batch = orphans.slice(start, start + TAKEOVER_CONCURRENCY);
      await Promise.all(batch.map((userId) => this.deps.endPresence(userId, lastSeen)));
    }
    // Removed only now, so a survivor that retries after this one died still finds them.
    await kv.del(nodeUsersKey(deadId));
    await kv.srem(NODE_REGISTRY_KEY, deadId);
    log.warn({ node: deadId, users: orphans.length }, 'ended the presence of a node whose lease lapsed');
  }
}
