import { randomUUID } from 'node:crypto';
import type { Kv } from '../kv/kv.js';

/** Which nodes of the service are alive: told by whatever keeps node leases (the presence module). */
export interface NodeLiveness {
  /** This node's id, as the lease records name it. */
  readonly nodeId: string;
  /** The ids among these whose lease is current. */
  alive(nodeIds: readonly string[]): Promise<Set<string>>;
}

/** A user's set outlives its last socket by this much at most (a node that died without a word). */
const SET_TTL_MS = 24 * 3600 * 1000;

/**
 * Sockets per user across every node (WS_MAX_SOCKETS_PER_USER). With Redis each authenticated
 * socket is a member `<node id>/<socket number>` of its user's set there. Admitting one adds it
 * first and then counts, so of two sockets admitted at once on two nodes neither can pass
 * unseen (both may be refused at the very limit, never both let through). What a count ignores:
 * members of nodes whose lease lapsed (a killed node's sockets), and members of this node that
 * no longer have a socket here (a removal lost while Redis was down); both are removed.
 *
 * The in-process store serves one node, whose own sockets are all there is to count: there the
 * count is the node's own and nothing is stored. A set per user in process memory cost about
 * 850 bytes per connected user, a quarter of what an idle socket costs.
 */
export class SocketQuota {
  private liveness: NodeLiveness | undefined;
  /** Until a node lease is known, this node names its members with an id of its own. */
  private readonly ownId = randomUUID();

  constructor(
    private readonly kv: Kv,
    readonly limit: number,
  ) {}

  /** Counts other nodes' members only while their lease is current, and names members by lease id. */
  useLiveness(liveness: NodeLiveness): void {
    this.liveness = liveness;
  }

  private get nodeId(): string {
    return this.liveness?.nodeId ?? this.ownId;
  }

  memberOf(socketNumber: number): string {
    return `${this.nodeId}/${socketNumber}`;
  }

  /**
   * Adds the socket to its user's set and tells whether it fits the limit; one that does not is
   * removed again. `localMembers` are the members of the user's sockets on this node.
   */
  async admit(userId: string, member: string, localMembers: readonly string[]): Promise<boolean> {
    if (this.kv.kind === 'memory') return localMembers.length < this.limit;
    const key = setKey(userId);
    // One round trip: Redis runs a connection's commands in the order they were sent.
    const [, , members] = await Promise.all([
      this.kv.sadd(key, member),
      this.kv.expire(key, SET_TTL_MS),
      this.kv.smembers(key),
    ]);
    const local = new Set([...localMembers, member]);
    const here = `${this.nodeId}/`;
    const otherNodes = [...new Set(members.filter((m) => !m.startsWith(here)).map(nodeOf))];
    const alive = this.liveness && otherNodes.length > 0 ? await this.liveness.alive(otherNodes) : undefined;
    const stale = members.filter((m) =>
      m.startsWith(here) ? !local.has(m) : alive !== undefined && !alive.has(nodeOf(m)),
    );
    if (stale.length > 0) await this.kv.srem(key, ...stale);
    if (members.length - stale.length <= this.limit) return true;
    await this.kv.srem(key, member);
    return false;
  }

  /** Removes a closed socket (or one that switched user) from its user's set. */
  async release(userId: string, member: string): Promise<void> {
    if (this.kv.kind === 'memory') return;
    await this.kv.srem(setKey(userId), member);
  }
}

const setKey = (userId: string) => `gateway:sockets:${userId}`;
const nodeOf = (member: string) => member.slice(0, member.lastIndexOf('/'));
