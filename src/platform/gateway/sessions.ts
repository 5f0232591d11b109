import { CloseCode } from '../../../protocol/frames.js';
import type { AuthUser } from '../auth/access-tokens.js';
import { expiryOf, type Principal, principalId, userOf } from '../auth/principal.js';
import type { Kv, StreamPosition } from '../kv/kv.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { quotaExceeded } from '../quota.js';
import type { Connection } from './connection.js';
import { Departures } from './departures.js';
import { ExpiryQueue } from './expiry-queue.js';
import type { CaughtUp } from './replay.js';
import { type NodeLiveness, SocketQuota } from './socket-quota.js';
import type { Subscriptions } from './subscriptions.js';
import { UserIndex } from './user-index.js';

/**
 * Hooks for features that care when a user's first connection on this node opens or the last
 * closes. `disconnected` comes in the sockets' departure turn (Departures), and not at all for a
 * last socket whose user connected here again before that turn.
 */
export interface SessionListener {
  connected?(user: AuthUser, firstOnThisNode: boolean): void | Promise<void>;
  disconnected?(userId: string, lastOnThisNode: boolean): void | Promise<void>;
}

/**
 * Closed sockets whose Redis work runs at once (Departures). Each takes a few sequential round
 * trips, so this many keep Redis busy while one turn of the loop handles only a few hundred replies.
 */
export const DEPARTURES_IN_FLIGHT = 64;

export interface SessionsDeps {
  log: Logger;
  metrics: Metrics;
  kv: Kv;
  subscriptions: Subscriptions;
  maxSocketsPerUser: number;
  authTimeoutMs: number;
}

/**
 * Who each connection speaks for, from its auth frame until it closes: the deadline to
 * authenticate, the per-user socket quota, the user's own topic, token expiry and revocation.
 */
export class Sessions {
  private readonly usersHere = new UserIndex<Connection>();
  private readonly socketQuota: SocketQuota;
  private readonly tokenExpiry = new ExpiryQueue<Connection>((connection) =>
    this.end(connection, 'access token expired'),
  );
  private readonly listeners: SessionListener[] = [];
  private readonly departures = new Departures(DEPARTURES_IN_FLIGHT);

  constructor(private readonly deps: SessionsDeps) {
    this.socketQuota = new SocketQuota(deps.kv, deps.maxSocketsPerUser);
  }

  onSession(listener: SessionListener): void {
    this.listeners.push(listener);
  }

  /** Sockets per user count across the nodes this tells alive (the presence module's leases). */
  useNodeLiveness(liveness: NodeLiveness): void {
    this.socketQuota.useLiveness(liveness);
  }

  /** Users with at least one authenticated connection on this node. */
  localUserIds(): string[] {
    return this.usersHere.userIds();
  }

  /** Whether the user has an authenticated connection on this node. */
  isLocalUser(userId: string): boolean {
    return this.usersHere.has(userId);
  }

  /** A new connection that does not authenticate within WS_AUTH_TIMEOUT_MS is closed with 4401. */
  opened(connection: Connection): void {
    connection.authDeadline = setTimeout(() => {
      if (connection.principal) return;
      this.deps.metrics.wsClosedByServer.inc({ reason: 'auth_timeout' });
      connection.close(CloseCode.AUTH_TIMEOUT, 'authentication deadline passed');
    }, this.deps.authTimeoutMs);
  }

  /**
   * Marks the connection as speaking for `principal` (called by the auth frame handler). The
   * socket lives as long as the credential: at a user token's expiry the connection closes with
   * 4403 unless a fresh auth frame came first. Switching to another principal drops the previous
   * one's subscriptions, whose delivery filters were decided for them. A user's connection
   * receives the user's own topic (`userTopic`) from the moment it is authenticated until it
   * closes or switches; joining it, the connection is first sent what it missed since `since`, and
   * the answer says where in the topic's history it now is.
   */
  async authenticate(
    connection: Connection,
    principal: Principal,
    since?: StreamPosition,
  ): Promise<CaughtUp> {
    const user = userOf(principal);
    if (user && principalId(connection.principal) !== user.id) await this.admit(connection, user);
    const previous = connection.principal;
    const joining = principalId(previous) !== principalId(principal);
    if (previous && joining) this.leave(connection, previous);
    connection.principal = principal;
    // Joined before anything is awaited, so a close meanwhile drops it with the rest; awaited with
    // the session listeners, so the user's events reach the socket once its auth is acknowledged.
    const ownTopic = user && joining ? this.deps.subscriptions.joinOwnTopic(connection, user.id) : undefined;
    clearTimeout(connection.authDeadline);
    connection.authDeadline = undefined;
    const expiresAt = expiryOf(principal);
    if (expiresAt === undefined) this.tokenExpiry.cancel(connection);
    else this.tokenExpiry.schedule(connection, expiresAt);
    if (!user) return {};
    const first = this.usersHere.add(user.id, connection);
    await Promise.all([ownTopic, first === undefined ? undefined : this.announceConnected(user, first)]);
    return joining ? this.deps.subscriptions.catchUpOwnTopic(connection, user.id, since) : {};
  }

  closed(connection: Connection): void {
    clearTimeout(connection.authDeadline);
    this.tokenExpiry.cancel(connection);
    const user = userOf(connection.principal);
    if (user) this.forgetUser(connection, user.id);
  }

  /** Stops expiring tokens and pacing departures: the gateway is closing every socket. */
  stop(): void {
    this.tokenExpiry.stop();
    this.departures.drain();
  }

  /** Closes the connection with 4403: its credential expired or was revoked. */
  end(connection: Connection, reason: string): void {
    this.deps.metrics.wsClosedByServer.inc({ reason: 'session_ended' });
    connection.close(CloseCode.SESSION_ENDED, reason);
  }

  /** The connection stops speaking for `previous`, which was another principal than its next one. */
  private leave(connection: Connection, previous: Principal): void {
    this.deps.subscriptions.leaveAll(connection);
    this.tokenExpiry.cancel(connection);
    const user = userOf(previous);
    if (user) this.forgetUser(connection, user.id);
  }

  /**
   * Counts the connection among its user's sockets on every node (SocketQuota); over
   * WS_MAX_SOCKETS_PER_USER the auth frame is refused with QUOTA_EXCEEDED and, once that error
   * frame went out, the socket is closed with 4409.
   */
  private async admit(connection: Connection, user: AuthUser): Promise<void> {
    const quota = this.socketQuota;
    const member = quota.memberOf(connection.number);
    const here = this.usersHere.connectionsOf(user.id).map((c) => quota.memberOf(c.number));
    if (await quota.admit(user.id, member, here)) {
      // Closed while it was being counted: nothing will release it later.
      if (connection.closed) void this.releaseSocket(user.id, connection);
      return;
    }
    this.deps.metrics.wsClosedByServer.inc({ reason: 'too_many_sockets' });
    setImmediate(() => connection.close(CloseCode.TOO_MANY_SOCKETS, 'too many sockets for this user'));
    throw quotaExceeded(`A user holds at most ${quota.limit} sockets at once.`, quota.limit);
  }

  private releaseSocket(userId: string, connection: Connection): Promise<void> {
    return this.socketQuota
      .release(userId, this.socketQuota.memberOf(connection.number))
      .catch((err) => this.deps.log.warn({ err, userId }, 'a closed socket could not be uncounted'));
  }

  private async announceConnected(user: AuthUser, firstOnThisNode: boolean): Promise<void> {
    for (const listener of this.listeners) await listener.connected?.(user, firstOnThisNode);
  }

  /** Forgets the connection here at once; the rest waits for its turn among the departures. */
  private forgetUser(connection: Connection, userId: string): void {
    const last = this.usersHere.delete(userId, connection);
    this.departures.run(async () => {
      const released = this.releaseSocket(userId, connection);
      // Back on this node while this waited: the listeners heard the user connect again, and must
      // not hear of a last departure that no longer holds (presence would end what just started).
      const back = last === true && this.usersHere.has(userId);
      const told = last === undefined || back ? [] : this.listeners;
      await Promise.all([
        released,
        ...told.map((listener) =>
          Promise.resolve(listener.disconnected?.(userId, last as boolean)).catch((err) =>
            this.deps.log.error({ err, userId }, 'session listener failed'),
          ),
        ),
      ]);
    });
  }
}
