import type { z } from 'zod';
import { CloseCode, ping } from '../../../protocol/frames.js';
import { payloadSchema } from '../../../protocol/operation.js';
import type { Principal } from '../auth/principal.js';
import type { EventBus } from '../bus.js';
import { concretePorts } from '../free-ports.js';
import type { InFlight } from '../in-flight.js';
import type { Kv, StreamPosition } from '../kv/kv.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { PlatformConfig } from '../platform-config.js';
import { Connection, type SocketData } from './connection.js';
import { FrameDispatcher, type FrameHandler, type HandleOptions, NO_ACK } from './dispatch.js';
import type { CaughtUp } from './replay.js';
import { type SessionListener, Sessions } from './sessions.js';
import type { NodeLiveness } from './socket-quota.js';
import { Subscriptions, type UserEventHandler } from './subscriptions.js';
import type { DeliveryFilter } from './topics.js';
import {
  attachConnection,
  connectionOf,
  listenOn,
  remoteAddressOf,
  type UwsBehavior,
  type UwsListenSocket,
  uws,
  uwsNative,
} from './uws.js';

/** The settings the gateway reads: where it listens, its limits per frame, connection, user and node. */
type GatewaySettings = Pick<
  PlatformConfig,
  | 'HOST'
  | 'WS_PORT'
  | 'WS_MAX_FRAME_BYTES'
  | 'WS_MAX_FRAMES_PER_SECOND'
  | 'WS_SETUP_CONCURRENCY'
  | 'WS_AUTH_CONCURRENCY'
  | 'WS_SETUP_QUEUE'
  | 'WS_MAX_SUBSCRIPTIONS'
  | 'WS_MAX_BUFFERED_BYTES'
  | 'WS_MAX_SOCKETS_PER_USER'
  | 'WS_AUTH_TIMEOUT_MS'
  | 'WS_IDLE_TIMEOUT_SECONDS'
>;

/** Frames above WS_MAX_FRAME_BYTES get an error frame; only above this multiple does uWS drop the socket. */
const HARD_CEILING_FACTOR = 4;
/**
 * Room above the buffered-bytes limit for paced frames (Connection.sendPaced): one bulk page or
 * one chunk commit may be a few MiB, and uWS drops whatever would exceed its ceiling.
 */
const PACED_FRAME_ALLOWANCE = 16 * 1024 * 1024;

/**
 * The realtime gateway: uWebSockets.js on WS_PORT, binary msgpack frames. It owns the sockets'
 * lifecycle (open, close, listen, closing them on shutdown) and hands the rest to its parts, whose
 * methods it passes through to modules: FrameDispatcher (frames to handlers, acks and errors),
 * Sessions (who a socket speaks for, and until when) and Subscriptions (topics and replay).
 */
export class Gateway {
  readonly native = uwsNative;
  private readonly app = uws.App();
  private readonly connections = new Set<Connection>();
  private connectionsOpened = 0;
  private readonly onSlowConsumer = () => this.deps.metrics.wsClosedByServer.inc({ reason: 'slow_consumer' });
  private readonly frames: FrameDispatcher;
  private readonly sessions: Sessions;
  private readonly subscriptions: Subscriptions;
  private listenSocket: UwsListenSocket | undefined;
  private boundPort = 0;
  private closing = false;
  /** The socket handlers uWS calls, emptied once this gateway closed (see forwardedTo). */
  private readonly socketEvents: { current?: SocketEvents } = {};

  constructor(
    private readonly deps: {
      config: GatewaySettings;
      log: Logger;
      metrics: Metrics;
      bus: EventBus;
      kv: Kv;
      /** The node's running work, which frame handlers count in (shutdown waits for it). */
      inFlight: InFlight;
    },
  ) {
    const { config, log, metrics, bus, kv, inFlight } = deps;
    this.frames = new FrameDispatcher({
      log,
      metrics,
      inFlight,
      maxFrameBytes: config.WS_MAX_FRAME_BYTES,
      maxFramesPerSecond: config.WS_MAX_FRAMES_PER_SECOND,
      setupConcurrency: { auth: config.WS_AUTH_CONCURRENCY, database: config.WS_SETUP_CONCURRENCY },
      maxSetupWaiting: config.WS_SETUP_QUEUE,
    });
    this.subscriptions = new Subscriptions({
      bus,
      log,
      maxSubscriptions: config.WS_MAX_SUBSCRIPTIONS,
      maxBufferedBytes: config.WS_MAX_BUFFERED_BYTES,
    });
    this.sessions = new Sessions({
      log,
      metrics,
      kv,
      subscriptions: this.subscriptions,
      maxSocketsPerUser: config.WS_MAX_SOCKETS_PER_USER,
      authTimeoutMs: config.WS_AUTH_TIMEOUT_MS,
    });
    this.socketEvents.current = {
      open: (ws) => this.onOpen(ws),
      message: (ws, message, isBinary) => {
        const connection = connectionOf(ws);
        if (connection) this.frames.receive(connection, message, isBinary);
      },
      drain: (ws) => connectionOf(ws)?.wakeDrainWaiters(),
      close: (ws) => {
        const connection = connectionOf(ws);
        if (connection) this.onClose(connection);
      },
    };
    this.app.ws<SocketData>('/ws', {
      maxPayloadLength: config.WS_MAX_FRAME_BYTES * HARD_CEILING_FACTOR,
      idleTimeout: config.WS_IDLE_TIMEOUT_SECONDS,
      sendPingsAutomatically: true,
      // Above our own limit, so the gateway notices a slow reader before uWS silently drops frames.
      maxBackpressure: config.WS_MAX_BUFFERED_BYTES * 2 + PACED_FRAME_ALLOWANCE,
      ...forwardedTo(this.socketEvents),
    });
    this.handle(
      ping.name,
      payloadSchema(ping),
      (connection, _payload, frame) => {
        connection.send({ t: 'pong', id: frame.id, ts: Date.now() });
        return NO_ACK;
      },
      { admits: 'anyone' },
    );
  }

  handle<Payload>(
    type: string,
    payload: z.ZodType<Payload>,
    handler: FrameHandler<Payload>,
    options?: HandleOptions,
  ): void {
    this.frames.handle(type, payload, handler, options);
  }

  handledTypes(): string[] {
    return this.frames.handledTypes();
  }

  onSession(listener: SessionListener): void {
    this.sessions.onSession(listener);
  }

  onUserEvent(type: string, handler: UserEventHandler): void {
    this.subscriptions.onUserEvent(type, handler);
  }

  authenticate(connection: Connection, principal: Principal, since?: StreamPosition): Promise<CaughtUp> {
    return this.sessions.authenticate(connection, principal, since);
  }

  subscribe(
    connection: Connection,
    entries: readonly { topic: string; filter?: DeliveryFilter }[],
  ): Promise<void> {
    return this.subscriptions.subscribe(connection, entries);
  }

  subscribeRecovering(
    connection: Connection,
    entry: { topic: string; filter?: DeliveryFilter },
    since?: StreamPosition,
  ): Promise<CaughtUp> {
    return this.subscriptions.subscribeRecovering(connection, entry, since);
  }

  unsubscribe(connection: Connection, topics: readonly string[]): void {
    this.subscriptions.unsubscribe(connection, topics);
  }

  useNodeLiveness(liveness: NodeLiveness): void {
    this.sessions.useNodeLiveness(liveness);
  }

  localUserIds(): string[] {
    return this.sessions.localUserIds();
  }

  isLocalUser(userId: string): boolean {
    return this.sessions.isLocalUser(userId);
  }

  /**
   * Closes this node's connections whose principal matches with 4403, saying `reason`: revoked
   * sessions (principal.ts `ofSessions`), services whose tokens died (`ofServices`).
   */
  endSessions(matches: (principal: Principal) => boolean, reason: string): void {
    for (const connection of this.connections) {
      if (connection.principal && matches(connection.principal)) this.sessions.end(connection, reason);
    }
  }

  get port(): number {
    return this.boundPort;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /**
   * Starts listening on HOST:WS_PORT and answers the port. For port 0 the gateway picks a free
   * port and listens on it: uSockets given 0 sets no SO_REUSEADDR, and the connections such a
   * socket accepted linger in TIME_WAIT once closed (the server closes them first, at shutdown
   * too), which kept the next process started on that port from binding it for up to a minute.
   * The port it picked is its own: bound without SO_REUSEPORT, so a process that picked it too
   * fails to bind instead of sharing the connections.
   */
  async listen(): Promise<number> {
    const { HOST, WS_PORT } = this.deps.config;
    const [port] = (await concretePorts(HOST, [WS_PORT])) as [number];
    return new Promise((resolve, reject) => {
      listenOn(this.app, { host: HOST, port, exclusive: WS_PORT === 0 }, (socket) => {
        if (!socket) return reject(new Error(`The gateway could not listen on ${HOST}:${port}.`));
        this.listenSocket = socket;
        this.boundPort = uws.us_socket_local_port(socket);
        resolve(this.boundPort);
      });
    });
  }

  /** Stops accepting connections; the open ones stay, and their frames are still served. */
  stopListening(): void {
    this.closing = true;
    if (this.listenSocket) {
      uws.us_listen_socket_close(this.listenSocket);
      this.listenSocket = undefined;
    }
  }

  /**
   * Closes every socket with 1001, listening no more. App.close calls it once the node's running
   * work finished, so that the acks and events of frames in flight still reached their sockets.
   */
  close(): void {
    this.stopListening();
    this.sessions.stop();
    for (const connection of [...this.connections])
      connection.close(CloseCode.GOING_AWAY, 'server shutting down');
    this.releaseSocketEventsOnceEmpty();
  }

  private releaseSocketEventsOnceEmpty(): void {
    if (this.closing && this.connections.size === 0) this.socketEvents.current = undefined;
  }

  private onOpen(ws: Parameters<typeof attachConnection<Connection>>[0]): void {
    const connection = new Connection(
      remoteAddressOf(ws),
      ws,
      this.deps.config.WS_MAX_BUFFERED_BYTES,
      this.onSlowConsumer,
    );
    connection.number = ++this.connectionsOpened;
    attachConnection(ws, connection);
    this.connections.add(connection);
    this.deps.metrics.wsConnections.inc();
    this.sessions.opened(connection);
  }

  private onClose(connection: Connection): void {
    connection.closed = true;
    this.connections.delete(connection);
    this.deps.metrics.wsConnections.dec();
    this.subscriptions.leaveAll(connection);
    connection.wakeDrainWaiters();
    for (const listener of connection.closeListeners ?? []) listener();
    this.sessions.closed(connection);
    this.releaseSocketEventsOnceEmpty();
  }
}

type SocketEvents = Required<Pick<UwsBehavior<SocketData>, 'open' | 'message' | 'drain' | 'close'>>;

/**
 * The handlers handed to uWS, which keeps them for the life of the process (an App cannot be
 * freed). They reach the gateway only through `events`, which a closed gateway empties, so the
 * gateway and the service around it can be collected: a process that builds and closes many
 * services (the test suite) would otherwise keep every one of them.
 */
function forwardedTo(events: { current?: SocketEvents }): SocketEvents {
  return {
    open: (ws) => events.current?.open(ws),
    message: (ws, message, isBinary) => events.current?.message(ws, message, isBinary),
    drain: (ws) => events.current?.drain(ws),
    close: (ws, code, message) => events.current?.close(ws, code, message),
  };
}
