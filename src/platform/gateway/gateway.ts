import type { z } from 'zod';
import { type ClientFrame, CloseCode, ping } from '../../../protocol/frames.js';
import { payloadSchema } from '../../../protocol/operation.js';
import type { Config } from '../../config.js';
import type { AuthUser } from '../auth/access-tokens.js';
import type { GameServerPrincipal } from '../auth/game-server-auth.js';
import { type BusEvent, type EventBus, type Recovery, userTopic } from '../bus.js';
import { AppError, asAppError, ErrorCode, toErrorFrame } from '../errors.js';
import type { Kv, StreamPosition } from '../kv/kv.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { quotaExceeded } from '../quota.js';
import { rateLimited } from '../rate-limit.js';
import { Connection, type SocketData } from './connection.js';
import { ExpiryQueue } from './expiry-queue.js';
import { FrameDecoder, FrameError } from './frame-decoder.js';
import { type NodeLiveness, SocketQuota } from './socket-quota.js';
import { type DeliveryFilter, encodeEvent, TopicRouter } from './topics.js';
import { UserIndex } from './user-index.js';
import {
  attachConnection,
  connectionOf,
  remoteAddressOf,
  type UwsListenSocket,
  uws,
  uwsNative,
} from './uws.js';

/** A frame handler gets the validated payload, returns the ack payload and throws AppError to refuse. */
export type FrameHandler<Payload> = (
  connection: Connection,
  payload: Payload,
  frame: ClientFrame,
) => unknown | Promise<unknown>;

interface Registration {
  payload: z.ZodType;
  handler: FrameHandler<unknown>;
  requiresAuth: boolean;
  /** Also accepted from a connection authenticated with a game server's token. */
  gameServers: boolean;
}

/** Runs on this node for an event on a user's own topic, for each of that user's connections here. */
export type UserEventHandler = (connection: Connection, event: BusEvent) => void;

/** Where a newly authenticated connection stands in its user's event history (docs/recovery.md). */
export interface CaughtUp {
  /** The position of the last event sent to it; absent when the history could not be read. */
  position?: StreamPosition;
  /** Set when the auth frame asked to recover: whether every missed event was replayed. */
  recovered?: boolean;
}

/** Hooks for features that care when a user's first connection on this node opens or the last closes. */
export interface SessionListener {
  connected?(user: AuthUser, firstOnThisNode: boolean): void | Promise<void>;
  disconnected?(userId: string, lastOnThisNode: boolean): void | Promise<void>;
}

/** Frames above WS_MAX_FRAME_BYTES get an error frame; only above this multiple does uWS drop the socket. */
const HARD_CEILING_FACTOR = 4;
/**
 * Room above the buffered-bytes limit for paced frames (Connection.sendPaced): one bulk page or
 * one chunk commit may be a few MiB, and uWS drops whatever would exceed its ceiling.
 */
const PACED_FRAME_ALLOWANCE = 16 * 1024 * 1024;
/** A client sending this many times its frame allowance within one second is disconnected. */
const FLOOD_CLOSE_FACTOR = 3;

/**
 * The realtime gateway: uWebSockets.js on WS_PORT, binary msgpack frames, one dispatch table.
 * Modules register frame handlers with `handle`; the transport, limits, authentication gate,
 * decoding, error mapping and event fan-out stay here.
 */
export class Gateway {
  readonly native = uwsNative;
  private readonly app = uws.App();
  private readonly handlers = new Map<string, Registration>();
  private readonly connections = new Set<Connection>();
  private readonly usersHere = new UserIndex<Connection>();
  private readonly socketQuota: SocketQuota;
  private connectionsOpened = 0;
  private readonly tokenExpiry = new ExpiryQueue<Connection>((connection) =>
    this.endSession(connection, 'access token expired'),
  );
  private readonly onSlowConsumer = () => this.deps.metrics.wsClosedByServer.inc({ reason: 'slow_consumer' });
  private readonly sessionListeners: SessionListener[] = [];
  private readonly userEventHandlers = new Map<string, UserEventHandler>();
  private readonly decoder: FrameDecoder;
  private readonly topics: TopicRouter;
  private listenSocket: UwsListenSocket | undefined;
  private boundPort = 0;
  private inflight = 0;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(
    private readonly deps: { config: Config; log: Logger; metrics: Metrics; bus: EventBus; kv: Kv },
  ) {
    const { config } = deps;
    this.socketQuota = new SocketQuota(deps.kv, config.WS_MAX_SOCKETS_PER_USER);
    this.decoder = new FrameDecoder(config.WS_MAX_FRAME_BYTES);
    this.topics = new TopicRouter(deps.bus, deps.log, (topic, event, members) =>
      this.consumeUserEvent(topic, event, members),
    );
    this.app.ws<SocketData>('/ws', {
      maxPayloadLength: config.WS_MAX_FRAME_BYTES * HARD_CEILING_FACTOR,
      idleTimeout: config.WS_IDLE_TIMEOUT_SECONDS,
      sendPingsAutomatically: true,
      // Above our own limit, so the gateway notices a slow reader before uWS silently drops frames.
      maxBackpressure: config.WS_MAX_BUFFERED_BYTES * 2 + PACED_FRAME_ALLOWANCE,
      open: (ws) => this.onOpen(ws),
      message: (ws, message, isBinary) => {
        const connection = connectionOf(ws);
        if (connection) this.onMessage(connection, message, isBinary);
      },
      drain: (ws) => connectionOf(ws)?.wakeDrainWaiters(),
      close: (ws) => {
        const connection = connectionOf(ws);
        if (connection) this.onClose(connection);
      },
    });
    this.handle(
      ping.name,
      payloadSchema(ping),
      (connection, _payload, frame) => {
        connection.send({ t: 'pong', id: frame.id, ts: Date.now() });
        return NO_ACK;
      },
      { requiresAuth: false },
    );
  }

  /**
   * Registers the handler of a frame type; its payload is validated against `payload` first, and
   * it needs an authenticated connection unless `requiresAuth` is false. Modules register theirs
   * through their operations (platform/operations.ts) rather than here.
   */
  handle<Payload>(
    type: string,
    payload: z.ZodType<Payload>,
    handler: FrameHandler<Payload>,
    options: { requiresAuth?: boolean; gameServers?: boolean } = {},
  ): void {
    if (this.handlers.has(type)) throw new Error(`Frame type ${type} already has a handler.`);
    this.handlers.set(type, {
      payload,
      handler: handler as FrameHandler<unknown>,
      requiresAuth: options.requiresAuth ?? true,
      gameServers: options.gameServers ?? false,
    });
  }

  /** The frame types with a handler, for the conformance test of the protocol catalogue. */
  handledTypes(): string[] {
    return [...this.handlers.keys()];
  }

  onSession(listener: SessionListener): void {
    this.sessionListeners.push(listener);
  }

  /**
   * Handles events of `type` published on a user's topic (`userTopic`) here, on every node, instead
   * of sending them to the user's clients: one module reacting to another's change on the sockets
   * it concerns (presence drops the subscriptions a new block forbids). Such types are never
   * client events.
   */
  onUserEvent(type: string, handler: UserEventHandler): void {
    if (this.userEventHandlers.has(type)) throw new Error(`User event ${type} already has a handler.`);
    this.userEventHandlers.set(type, handler);
  }

  /**
   * Marks the connection as speaking for `user` (called by the auth frame handler). The socket
   * lives as long as the token: at its expiry the connection closes with 4403 unless a fresh auth
   * frame came first. Switching to another user drops the previous user's subscriptions, whose
   * delivery filters were decided for them. The connection receives its user's own topic
   * (`userTopic`) from the moment it is authenticated until it closes or switches user; joining
   * it, the connection is first sent what it missed since `since` (catchUp), and the answer says
   * where in the topic's history it now is.
   */
  async authenticate(connection: Connection, user: AuthUser, since?: StreamPosition): Promise<CaughtUp> {
    if (connection.user?.id !== user.id) await this.admit(connection, user);
    const previous = connection.user;
    if (connection.gameServer) {
      this.topics.removeAll(connection);
      connection.gameServer = undefined;
    }
    if (previous && previous.id !== user.id) {
      this.topics.removeAll(connection);
      this.forgetUser(connection, previous.id);
    }
    connection.user = user;
    const joining = previous?.id !== user.id;
    // Live events wait from the start, so none can pass the replay of older ones.
    if (joining) hold(connection, userTopic(user.id));
    // Joined before anything is awaited, so a close meanwhile drops it with the rest; awaited with
    // the session listeners, so the user's events reach the socket once its auth is acknowledged.
    const ownTopic = joining ? this.topics.add(connection, userTopic(user.id)) : undefined;
    clearTimeout(connection.authDeadline);
    connection.authDeadline = undefined;
    if (user.expiresAt === undefined) this.tokenExpiry.cancel(connection);
    else this.tokenExpiry.schedule(connection, user.expiresAt);
    const first = this.usersHere.add(user.id, connection);
    await Promise.all([ownTopic, first === undefined ? undefined : this.announceConnected(user, first)]);
    return joining ? this.catchUp(connection, userTopic(user.id), since) : {};
  }

  /**
   * Sends the connection the events of a recorded topic it just joined after `since` when they
   * are all still kept (those its filter lets through), then the live events held meanwhile (those
   * the replay did not already carry), in order. Without `since`, or when the history cannot be
   * read (Redis down), only the held ones: the socket works, and the client learns from
   * `recovered: false` to refetch through the history routes.
   */
  private async catchUp(
    connection: Connection,
    topic: string,
    since?: StreamPosition,
    filter?: DeliveryFilter,
  ): Promise<CaughtUp> {
    let recovery: Recovery | undefined;
    try {
      recovery = since
        ? await this.deps.bus.recover(topic, since)
        : { recovered: false, position: await this.deps.bus.positionOf(topic) };
    } catch (err) {
      this.deps.log.warn({ err }, 'the event history could not be read; the client refetches');
    }
    let position = recovery?.position;
    let replayedThrough = 0;
    if (recovery?.recovered) {
      replayedThrough = recovery.position.offset;
      for (const event of recovery.events) {
        // Events a node consumed itself (onUserEvent) were never the client's.
        if (this.userEventHandlers.has(event.t) || (filter && !filter(event.audience))) continue;
        if (!(await this.sendReplayed(connection, encodeEvent(topic, event)))) break;
      }
    }
    const held = connection.held?.get(topic) ?? [];
    release(connection, topic);
    for (const event of held) {
      if (event.position.offset <= replayedThrough) continue;
      connection.sendEncoded(event.bytes);
      position = event.position;
    }
    return { position, ...(since ? { recovered: recovery?.recovered === true } : {}) };
  }

  /** A replay may be a thousand frames: it goes out paced, never tripping the slow-consumer limit. */
  private async sendReplayed(connection: Connection, bytes: Uint8Array): Promise<boolean> {
    const below = this.deps.config.WS_MAX_BUFFERED_BYTES / 2;
    if (connection.bufferedBytes > below) await connection.drained(below);
    return connection.sendPaced(bytes) === 'sent';
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
      if (connection.closed) this.releaseSocket(user.id, connection);
      return;
    }
    this.deps.metrics.wsClosedByServer.inc({ reason: 'too_many_sockets' });
    setImmediate(() => connection.close(CloseCode.TOO_MANY_SOCKETS, 'too many sockets for this user'));
    throw quotaExceeded(`A user holds at most ${quota.limit} sockets at once.`, quota.limit);
  }

  private releaseSocket(userId: string, connection: Connection): void {
    this.socketQuota
      .release(userId, this.socketQuota.memberOf(connection.number))
      .catch((err) => this.deps.log.warn({ err, userId }, 'a closed socket could not be uncounted'));
  }

  /** Sockets per user count across the nodes this tells alive (the presence module's leases). */
  useNodeLiveness(liveness: NodeLiveness): void {
    this.socketQuota.useLiveness(liveness);
  }

  private async announceConnected(user: AuthUser, firstOnThisNode: boolean): Promise<void> {
    for (const listener of this.sessionListeners) await listener.connected?.(user, firstOnThisNode);
  }

  /**
   * Delivers each topic's events to the connection (when its filter allows); resolves once all
   * are active. All or none: over the subscription limit, nothing is subscribed.
   */
  async subscribe(
    connection: Connection,
    entries: readonly { topic: string; filter?: DeliveryFilter }[],
  ): Promise<void> {
    const added = new Set(entries.map((e) => e.topic).filter((topic) => !connection.topics?.has(topic)));
    // The user's own topic is the gateway's, not a subscription the client asked for.
    const held = (connection.topics?.size ?? 0) - (connection.user ? 1 : 0);
    if (held + added.size > this.deps.config.WS_MAX_SUBSCRIPTIONS) {
      throw new AppError(
        ErrorCode.SUBSCRIPTION_LIMIT,
        `A connection may hold at most ${this.deps.config.WS_MAX_SUBSCRIPTIONS} subscriptions.`,
      );
    }
    await Promise.all(entries.map(({ topic, filter }) => this.topics.add(connection, topic, filter)));
  }

  /**
   * Subscribes the connection to a recorded topic (one a module asked the bus to record), first
   * sending what it missed since `since` as `authenticate` does for the user's own topic. A topic
   * the connection already follows is left as it is: nothing is replayed and the answer is empty.
   */
  async subscribeRecovering(
    connection: Connection,
    entry: { topic: string; filter?: DeliveryFilter },
    since?: StreamPosition,
  ): Promise<CaughtUp> {
    if (connection.topics?.has(entry.topic)) return {};
    hold(connection, entry.topic);
    try {
      await this.subscribe(connection, [entry]);
    } catch (error) {
      release(connection, entry.topic);
      throw error;
    }
    return this.catchUp(connection, entry.topic, since, entry.filter);
  }

  unsubscribe(connection: Connection, topics: readonly string[]): void {
    for (const topic of topics) this.topics.remove(connection, topic);
  }

  /**
   * Marks the connection as a game server's (the auth frame with a server token). A connection
   * speaks for one principal: a user's subscriptions go. No expiry is scheduled, as server tokens
   * do not expire: they are revoked, and `closeGameServers` closes their sockets then.
   */
  authenticateGameServer(connection: Connection, server: GameServerPrincipal): void {
    if (connection.user) {
      this.topics.removeAll(connection);
      this.tokenExpiry.cancel(connection);
      this.forgetUser(connection, connection.user.id);
      connection.user = undefined;
    }
    connection.gameServer = server;
    clearTimeout(connection.authDeadline);
    connection.authDeadline = undefined;
  }

  /**
   * Closes this node's connections of these game servers, and of every game server of these worlds
   * (stopped, failed, or gone with a deleted world: their tokens are dead).
   */
  closeGameServers(serverIds: readonly string[], worldIds: readonly string[] = []): void {
    const ended = new Set(serverIds);
    const gone = new Set(worldIds);
    for (const connection of this.connections) {
      const server = connection.gameServer;
      if (server && (ended.has(server.serverId) || gone.has(server.worldId)))
        this.endSession(connection, 'game server ended');
    }
  }

  /** Closes this node's connections of revoked sessions (logout, refresh-token reuse, account deletion). */
  closeSessions(sessionIds: readonly string[]): void {
    const ended = new Set(sessionIds);
    for (const connection of this.connections) {
      if (connection.user && ended.has(connection.user.sessionId))
        this.endSession(connection, 'session revoked');
    }
  }

  private endSession(connection: Connection, reason: string): void {
    this.deps.metrics.wsClosedByServer.inc({ reason: 'session_ended' });
    connection.close(CloseCode.SESSION_ENDED, reason);
  }

  /** Users with at least one authenticated connection on this node. */
  localUserIds(): string[] {
    return this.usersHere.userIds();
  }

  get port(): number {
    return this.boundPort;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Starts listening on HOST:WS_PORT; port 0 picks a free port, returned here. */
  listen(): Promise<number> {
    const { HOST, WS_PORT } = this.deps.config;
    return new Promise((resolve, reject) => {
      this.app.listen(HOST, WS_PORT, (socket) => {
        if (!socket) return reject(new Error(`The gateway could not listen on ${HOST}:${WS_PORT}.`));
        this.listenSocket = socket;
        this.boundPort = uws.us_socket_local_port(socket);
        resolve(this.boundPort);
      });
    });
  }

  /** Stops accepting, lets in-flight frames finish (up to `graceMs`), then closes every socket. */
  async close(graceMs = this.deps.config.SHUTDOWN_GRACE_MS): Promise<void> {
    if (this.listenSocket) {
      uws.us_listen_socket_close(this.listenSocket);
      this.listenSocket = undefined;
    }
    await this.waitForIdle(graceMs);
    this.tokenExpiry.stop();
    for (const connection of [...this.connections])
      connection.close(CloseCode.GOING_AWAY, 'server shutting down');
  }

  private onOpen(ws: Parameters<typeof attachConnection<Connection>>[0]): void {
    const { config, metrics } = this.deps;
    const connection = new Connection(
      remoteAddressOf(ws),
      ws,
      config.WS_MAX_BUFFERED_BYTES,
      this.onSlowConsumer,
    );
    connection.number = ++this.connectionsOpened;
    attachConnection(ws, connection);
    this.connections.add(connection);
    metrics.wsConnections.inc();
    connection.authDeadline = setTimeout(() => {
      if (connection.user) return;
      metrics.wsClosedByServer.inc({ reason: 'auth_timeout' });
      connection.close(CloseCode.AUTH_TIMEOUT, 'authentication deadline passed');
    }, config.WS_AUTH_TIMEOUT_MS);
  }

  private onClose(connection: Connection): void {
    connection.closed = true;
    clearTimeout(connection.authDeadline);
    this.tokenExpiry.cancel(connection);
    this.connections.delete(connection);
    this.deps.metrics.wsConnections.dec();
    this.topics.removeAll(connection);
    connection.wakeDrainWaiters();
    for (const listener of connection.closeListeners ?? []) listener();
    if (connection.user) this.forgetUser(connection, connection.user.id);
  }

  /** The TopicRouter's interceptor: consumes the event types registered with `onUserEvent`. */
  private consumeUserEvent(topic: string, event: BusEvent, members: Iterable<Connection>): boolean {
    const handler = this.userEventHandlers.get(event.t);
    if (!handler) return false;
    for (const connection of members) {
      if (!connection.user || topic !== userTopic(connection.user.id)) continue;
      try {
        handler(connection, event);
      } catch (err) {
        this.deps.log.error({ err, type: event.t }, 'user event handler failed');
      }
    }
    return true;
  }

  private forgetUser(connection: Connection, userId: string): void {
    this.releaseSocket(userId, connection);
    const last = this.usersHere.delete(userId, connection);
    if (last === undefined) return;
    for (const listener of this.sessionListeners) {
      Promise.resolve(listener.disconnected?.(userId, last)).catch((err) =>
        this.deps.log.error({ err, userId }, 'session listener failed'),
      );
    }
  }

  private onMessage(connection: Connection, message: ArrayBuffer, isBinary: boolean): void {
    // Decoding happens first and synchronously: uWS reclaims `message` when this callback returns.
    let frame: ClientFrame | undefined;
    let failure: FrameError | undefined;
    try {
      frame = this.decoder.decode(message, isBinary);
    } catch (error) {
      failure = error instanceof FrameError ? error : new FrameError(asAppError(error), undefined);
    }
    const now = Date.now();
    const count = connection.countFrame(now);
    if (count > this.deps.config.WS_MAX_FRAMES_PER_SECOND) {
      this.onFlood(connection, count, connection.msLeftInWindow(now), frame?.id ?? failure?.requestId);
      return;
    }
    if (frame) this.dispatch(connection, frame);
    else if (failure) {
      this.deps.metrics.wsFramesReceived.inc({ type: 'invalid' });
      this.sendError(connection, failure.cause, failure.requestId);
    }
  }

  private onFlood(
    connection: Connection,
    count: number,
    msLeft: number,
    requestId: number | undefined,
  ): void {
    if (count > this.deps.config.WS_MAX_FRAMES_PER_SECOND * FLOOD_CLOSE_FACTOR) {
      this.deps.metrics.wsClosedByServer.inc({ reason: 'flood' });
      connection.close(CloseCode.FLOOD, 'too many frames');
      return;
    }
    // One error per window is enough to tell a fire-and-forget sender; requests still get theirs.
    const firstRejection = count === this.deps.config.WS_MAX_FRAMES_PER_SECOND + 1;
    if (requestId === undefined && !firstRejection) return;
    const error = rateLimited(
      `At most ${this.deps.config.WS_MAX_FRAMES_PER_SECOND} frames per second; this frame was dropped.`,
      msLeft,
    );
    this.sendError(connection, error, requestId);
  }

  private dispatch(connection: Connection, frame: ClientFrame): void {
    const registration = this.handlers.get(frame.t);
    this.deps.metrics.wsFramesReceived.inc({ type: registration ? frame.t : 'unknown' });
    if (!registration) {
      this.sendError(
        connection,
        new AppError(ErrorCode.UNKNOWN_FRAME_TYPE, `Unknown frame type ${frame.t}.`),
        frame.id,
      );
      return;
    }
    const allowed = connection.user || (connection.gameServer && registration.gameServers);
    if (registration.requiresAuth && !allowed) {
      this.sendError(
        connection,
        new AppError(ErrorCode.UNAUTHENTICATED, 'Send an auth frame first.'),
        frame.id,
      );
      return;
    }
    const parsed = registration.payload.safeParse(frame.d);
    if (!parsed.success) {
      const errors = parsed.error.issues.map((i) => ({
        path: ['d', ...i.path].join('.'),
        message: i.message,
      }));
      this.sendError(
        connection,
        new AppError(ErrorCode.VALIDATION_FAILED, `The ${frame.t} frame's payload is invalid.`, { errors }),
        frame.id,
      );
      return;
    }
    this.run(connection, frame, () => registration.handler(connection, parsed.data, frame));
  }

  /** Runs a handler, answering with an ack (when the frame had an id) or an error frame. */
  private run(connection: Connection, frame: ClientFrame, invoke: () => unknown): void {
    const reply = (result: unknown) => {
      if (result !== NO_ACK && frame.id !== undefined) connection.send({ t: 'ack', id: frame.id, d: result });
    };
    const fail = (error: unknown) => {
      // A lost dependency is logged once at warn by asAppError, with its reason only.
      const appError = asAppError(error, this.deps.log);
      if (appError.code === ErrorCode.INTERNAL)
        this.deps.log.error({ err: error, frame: frame.t }, 'frame handler failed');
      this.sendError(connection, appError, frame.id);
    };
    let result: unknown;
    try {
      result = invoke();
    } catch (error) {
      fail(error);
      return;
    }
    if (!(result instanceof Promise)) {
      reply(result);
      return;
    }
    this.inflight++;
    result.then(reply, fail).finally(() => {
      this.inflight--;
      if (this.inflight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    });
  }

  private sendError(connection: Connection, error: AppError, requestId?: number): void {
    this.deps.metrics.wsErrorFrames.inc({ code: error.code });
    connection.send(toErrorFrame(error, requestId));
  }

  private waitForIdle(timeoutMs: number): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** From now until its catch-up, the live events of `topic` wait for the replay of older ones. */
function hold(connection: Connection, topic: string): void {
  connection.held ??= new Map();
  connection.held.set(topic, []);
}

function release(connection: Connection, topic: string): void {
  connection.held?.delete(topic);
  if (connection.held?.size === 0) connection.held = undefined;
}

/** Returned by handlers that answer with their own frame (like ping's pong) instead of an ack. */
export const NO_ACK = Symbol('no-ack');
