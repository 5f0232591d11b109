import { Decoder } from '@msgpack/msgpack';
import { type ClientFrame, ClientFrameType, CloseCode, clientFrameSchema } from '../../../protocol/frames.js';
import type { Config } from '../../config.js';
import { AppError, asAppError, ErrorCode, toErrorFrame } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { Connection, type SocketData } from './connection.js';
import {
  attachConnection,
  connectionOf,
  remoteAddressOf,
  type UwsListenSocket,
  uws,
  uwsNative,
} from './uws.js';

/** A frame handler returns the ack payload (or undefined) and throws AppError to refuse. */
export type FrameHandler = (connection: Connection, frame: ClientFrame) => unknown | Promise<unknown>;

/**
 * Frames above WS_MAX_FRAME_BYTES are answered with an error frame; only frames above this
 * multiple of it make uWS drop the connection, so a client learns its mistake instead of
 * seeing a bare disconnect.
 */
const HARD_CEILING_FACTOR = 4;

/**
 * The realtime gateway: uWebSockets.js on WS_PORT, binary msgpack frames, one dispatch table.
 * Modules register frame handlers with `handle`; the transport, decoding and error mapping stay here.
 */
export class Gateway {
  readonly native = uwsNative;
  private readonly app = uws.App();
  private readonly handlers = new Map<string, FrameHandler>();
  private readonly connections = new Set<Connection>();
  private readonly decoder: Decoder;
  private listenSocket: UwsListenSocket | undefined;
  private boundPort = 0;
  private nextConnectionId = 1;
  private inflight = 0;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(private readonly deps: { config: Config; log: Logger; metrics: Metrics }) {
    const maxFrame = deps.config.WS_MAX_FRAME_BYTES;
    this.decoder = new Decoder({
      maxStrLength: maxFrame,
      maxBinLength: maxFrame,
      maxArrayLength: maxFrame,
      maxMapLength: maxFrame,
    });
    this.app.ws<SocketData>('/ws', {
      maxPayloadLength: maxFrame * HARD_CEILING_FACTOR,
      idleTimeout: deps.config.WS_IDLE_TIMEOUT_SECONDS,
      sendPingsAutomatically: true,
      open: (ws) => {
        const connection = new Connection(`c${this.nextConnectionId++}`, remoteAddressOf(ws), ws);
        attachConnection(ws, connection);
        this.connections.add(connection);
        deps.metrics.wsConnections.inc();
      },
      message: (ws, message, isBinary) => {
        const connection = connectionOf(ws);
        if (connection) this.onMessage(connection, message, isBinary);
      },
      close: (ws) => {
        const connection = connectionOf(ws);
        if (!connection) return;
        connection.closed = true;
        this.connections.delete(connection);
        deps.metrics.wsConnections.dec();
      },
    });
    this.handle(ClientFrameType.PING, (connection, frame) => {
      connection.send({ t: 'pong', id: frame.id, ts: Date.now() });
      return NO_ACK;
    });
  }

  handle(type: string, handler: FrameHandler): void {
    if (this.handlers.has(type)) throw new Error(`Frame type ${type} already has a handler.`);
    this.handlers.set(type, handler);
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
    for (const connection of [...this.connections])
      connection.close(CloseCode.GOING_AWAY, 'server shutting down');
  }

  private onMessage(connection: Connection, message: ArrayBuffer, isBinary: boolean): void {
    let frame: ClientFrame;
    try {
      frame = this.decode(message, isBinary);
    } catch (error) {
      this.deps.metrics.wsFramesReceived.inc({ type: 'invalid' });
      const requestId = error instanceof FrameError ? error.requestId : undefined;
      this.sendError(connection, asAppError(error instanceof FrameError ? error.cause : error), requestId);
      return;
    }
    const handler = this.handlers.get(frame.t);
    this.deps.metrics.wsFramesReceived.inc({ type: handler ? frame.t : 'unknown' });
    if (!handler) {
      const error = new AppError(ErrorCode.UNKNOWN_FRAME_TYPE, `Unknown frame type ${frame.t}.`);
      this.sendError(connection, error, frame.id);
      return;
    }
    this.run(connection, frame, handler);
  }

  /** Runs a handler, answering with an ack (when the frame had an id) or an error frame. */
  private run(connection: Connection, frame: ClientFrame, handler: FrameHandler): void {
    const reply = (result: unknown) => {
      if (result !== NO_ACK && frame.id !== undefined) connection.send({ t: 'ack', id: frame.id, d: result });
    };
    const fail = (error: unknown) => {
      if (!(error instanceof AppError))
        this.deps.log.error({ err: error, frame: frame.t }, 'frame handler failed');
      this.sendError(connection, asAppError(error), frame.id);
    };
    let result: unknown;
    try {
      result = handler(connection, frame);
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

  private decode(message: ArrayBuffer, isBinary: boolean): ClientFrame {
    if (!isBinary)
      throw new AppError(ErrorCode.MALFORMED_REQUEST, 'Frames must be binary msgpack, not text.');
    if (message.byteLength > this.deps.config.WS_MAX_FRAME_BYTES) {
      throw new AppError(
        ErrorCode.FRAME_TOO_LARGE,
        `The frame is ${message.byteLength} bytes; the limit is ${this.deps.config.WS_MAX_FRAME_BYTES}.`,
      );
    }
    let decoded: unknown;
    try {
      decoded = this.decoder.decode(new Uint8Array(message));
    } catch {
      throw new AppError(ErrorCode.MALFORMED_REQUEST, 'The frame is not valid msgpack.');
    }
    const parsed = clientFrameSchema.safeParse(decoded);
    if (parsed.success) return parsed.data;
    const id = (decoded as { id?: unknown } | null)?.id;
    const requestId = typeof id === 'number' && Number.isInteger(id) && id >= 0 ? id : undefined;
    const errors = parsed.error.issues.map((issue) => ({
      path: issue.path.join('.'),
      message: issue.message,
    }));
    throw new FrameError(
      new AppError(
        ErrorCode.MALFORMED_REQUEST,
        'A frame is a msgpack map {t: string, id?: uint32, d?: any}.',
        { errors },
      ),
      requestId,
    );
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

/** Returned by handlers that answer with their own frame (like ping's pong) instead of an ack. */
export const NO_ACK = Symbol('no-ack');

/** A decoding failure that still knows the request id to echo. */
class FrameError extends Error {
  constructor(
    override readonly cause: AppError,
    readonly requestId: number | undefined,
  ) {
    super(cause.message);
  }
}
