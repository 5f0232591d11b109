import { decode, Encoder } from '@msgpack/msgpack';
import type { ErrorCode, FieldError } from './errors.js';
import { type EventPayloads, REQUEST_ID_MAX } from './frames.js';
import type { AckPayloads, ClientFrameTypeName, ClientPayload } from './operations.js';
import type { StreamPosition, StreamReset } from './stream-position.js';

/**
 * A typed client of the gateway for tests, benchmarks and game clients. It speaks the wire format
 * of `frames.ts`: one msgpack map per binary message, requests matched to their ack, error or pong
 * by `id`, events dispatched by `t`. See protocol/README.md.
 */

/** The events the client listens to, as both browsers and the `ws` package deliver them. */
interface SocketEvents {
  open: unknown;
  message: { data: unknown };
  close: { code: number; reason: string };
  error: unknown;
}

/**
 * The part of a WebSocket the client needs: satisfied by the browser's and Node 22's global
 * WebSocket and by the `ws` package, without depending on DOM or `ws` type definitions.
 */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener<K extends keyof SocketEvents>(type: K, listener: (event: SocketEvents[K]) => void): void;
}

export type WebSocketConstructorLike = new (url: string) => WebSocketLike;

export interface AtriumSocketOptions {
  /** The WebSocket implementation; defaults to `globalThis.WebSocket`. On Node 20 pass `ws`'s export. */
  WebSocket?: WebSocketConstructorLike;
  /** How long a request waits for its answer before failing with TIMEOUT. Default 10 000 ms. */
  requestTimeoutMs?: number;
  /** How long `connect` waits for the socket to open before failing with CONNECT_FAILED. Default 10 000 ms. */
  connectTimeoutMs?: number;
}

/** Codes the clients themselves produce (BAD_RESPONSE: AtriumClient's REST path); never sent by the server. */
export type ClientErrorCode = 'TIMEOUT' | 'CLOSED' | 'CONNECT_FAILED' | 'BAD_RESPONSE';

/**
 * A refused request (from the server's error frame, with the same `code` REST uses) or a
 * client-side failure (TIMEOUT, CLOSED, CONNECT_FAILED). Codes unknown to this version are kept as
 * they arrive: the server may add codes.
 */
export class AtriumError extends Error {
  override name = 'AtriumError';
  readonly code: ErrorCode | ClientErrorCode | (string & {});
  readonly errors?: FieldError[];
  /** Seconds to wait before retrying (with RATE_LIMITED). */
  readonly retryAfter?: number;
  /** The id of the request this error answers, when it answers one. */
  readonly requestId?: number;

  constructor(
    code: ErrorCode | ClientErrorCode | (string & {}),
    message: string,
    extra: { errors?: FieldError[]; retryAfter?: number; requestId?: number } = {},
  ) {
    super(message);
    this.code = code;
    if (extra.errors !== undefined) this.errors = extra.errors;
    if (extra.retryAfter !== undefined) this.retryAfter = extra.retryAfter;
    if (extra.requestId !== undefined) this.requestId = extra.requestId;
  }
}

/** Client frame types answered by an ack (ping is answered by a pong: use `ping()`). */
export type RequestType = Exclude<ClientFrameTypeName, 'ping'>;

/** The payload argument is optional only for frames that take none. */
export type PayloadArgs<T extends ClientFrameTypeName> =
  undefined extends ClientPayload<T> ? [payload?: ClientPayload<T>] : [payload: ClientPayload<T>];

export type RequestArgs<T extends ClientFrameTypeName> =
  undefined extends ClientPayload<T>
    ? [payload?: ClientPayload<T>, timeoutMs?: number]
    : [payload: ClientPayload<T>, timeoutMs?: number];

interface Pending {
  resolve(frame: Record<string, unknown>): void;
  reject(error: AtriumError): void;
  timer: ReturnType<typeof setTimeout>;
}

const OPEN = 1;
const DEFAULT_TIMEOUT_MS = 10_000;
// `d: undefined` must be left out, not sent as nil: a frame without payload has no `d`.
const encoder = new Encoder({ ignoreUndefined: true });

export class AtriumSocket {
  /** Resolves when the socket closed, with the close code and reason. Never rejects. */
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly pending = new Map<number, Pending>();
  private readonly eventHandlers = new Map<string, Set<(payload: never) => void>>();
  private readonly errorHandlers = new Set<(error: AtriumError) => void>();
  private readonly requestTimeoutMs: number;
  private nextId = 1;
  private isClosed = false;
  /**
   * Where this connection stands in the user's event stream: the `pos` of the last event received,
   * or the auth ack's `position`. Pass it as `recover` when authenticating a later connection.
   */
  position: StreamPosition | undefined;
  /**
   * The same for the other streams this connection received events of (joined chats), by the
   * `stream` their positions name: pass one as `recover` when joining that chat again.
   */
  readonly streamPositions = new Map<string, StreamPosition>();

  private constructor(
    private readonly socket: WebSocketLike,
    options: AtriumSocketOptions,
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    socket.addEventListener('message', (event) => this.onMessage(event.data));
    this.closed = new Promise((resolve) => {
      socket.addEventListener('close', (event) => {
        this.isClosed = true;
        const pending = [...this.pending.values()];
        this.pending.clear();
        for (const entry of pending) {
          clearTimeout(entry.timer);
          entry.reject(
            new AtriumError('CLOSED', `The connection closed (${event.code}) before the answer arrived.`),
          );
        }
        resolve({ code: event.code, reason: event.reason });
      });
    });
  }

  /** Opens a connection to the gateway (`ws://host:port/ws`); resolves once the socket is open. */
  static connect(url: string, options: AtriumSocketOptions = {}): Promise<AtriumSocket> {
    const WebSocketImpl =
      options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructorLike }).WebSocket;
    if (!WebSocketImpl) {
      return Promise.reject(
        new AtriumError(
          'CONNECT_FAILED',
          'No WebSocket implementation: pass options.WebSocket (e.g. from `ws`).',
        ),
      );
    }
    let socket: WebSocketLike;
    try {
      socket = new WebSocketImpl(url);
    } catch (error) {
      return Promise.reject(new AtriumError('CONNECT_FAILED', `Cannot connect to ${url}: ${String(error)}`));
    }
    socket.binaryType = 'arraybuffer';
    const client = new AtriumSocket(socket, options);
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (message: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(new AtriumError('CONNECT_FAILED', message));
        if (socket.readyState < 2) socket.close();
      };
      const timer = setTimeout(
        () => fail(`Connecting to ${url} timed out.`),
        options.connectTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      );
      socket.addEventListener('open', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(client);
      });
      socket.addEventListener('error', () => fail(`Cannot connect to ${url}.`));
      socket.addEventListener('close', (event) => fail(`The connection to ${url} closed (${event.code}).`));
    });
  }

  /**
   * Sends a frame with a fresh request id; resolves with the ack's payload, rejects with an
   * AtriumError carrying the error frame's code, TIMEOUT after `timeoutMs` or CLOSED.
   */
  request<T extends RequestType>(type: T, ...args: RequestArgs<T>): Promise<AckPayloads[T]> {
    const [payload, timeoutMs] = args;
    return this.call(type, payload, timeoutMs).then((frame) => frame.d as AckPayloads[T]);
  }

  /**
   * Authenticates the connection with an access token. With `recover` (an earlier connection's
   * `position`), the events missed since arrive before the ack, and its `recovered` says whether
   * they all could.
   */
  async auth(token: string, timeoutMs?: number, recover?: StreamPosition): Promise<AckPayloads['auth']> {
    const ack = await this.request('auth', recover ? { token, recover } : { token }, timeoutMs);
    if ('position' in ack && ack.position) this.position = ack.position;
    return ack;
  }

  /**
   * Calls a server extension's rpc by name (the `rpc` frame); resolves with its `result`. Its
   * type is the extension's to say, so `R` is the caller's word for it.
   */
  async rpc<R = unknown>(name: string, input?: unknown, timeoutMs?: number): Promise<R> {
    const { result } = await this.request('rpc', { name, input }, timeoutMs);
    return result as R;
  }

  /** An application-level round trip: the measured round-trip time and the server's clock. */
  async ping(timeoutMs?: number): Promise<{ rttMs: number; serverTime: number }> {
    const started = performance.now();
    const pong = await this.call('ping', undefined, timeoutMs);
    return { rttMs: performance.now() - started, serverTime: Number(pong.ts) };
  }

  /** Sends a frame without an id: no ack; a failure arrives as an error frame for `onError`. */
  send<T extends ClientFrameTypeName>(type: T, ...args: PayloadArgs<T>): boolean {
    if (this.isClosed || this.socket.readyState !== OPEN) return false;
    this.socket.send(encoder.encode({ t: type, d: args[0] }));
    return true;
  }

  /** Calls `handler` for each server event of `type`; returns a function that removes it. */
  on<T extends keyof EventPayloads>(type: T, handler: (payload: EventPayloads[T]) => void): () => void {
    let handlers = this.eventHandlers.get(type);
    if (!handlers) {
      handlers = new Set();
      this.eventHandlers.set(type, handlers);
    }
    const entry = handler as (payload: never) => void;
    handlers.add(entry);
    return () => {
      handlers.delete(entry);
    };
  }

  /** Calls `handler` for error frames that answer no pending request (frames sent without an id). */
  onError(handler: (error: AtriumError) => void): () => void {
    this.errorHandlers.add(handler);
    return () => {
      this.errorHandlers.delete(handler);
    };
  }

  /** Starts the closing handshake; pending requests fail with CLOSED once the socket closed. */
  close(code?: number, reason?: string): void {
    this.socket.close(code, reason);
  }

  private call(
    type: string,
    payload: unknown,
    timeoutMs = this.requestTimeoutMs,
  ): Promise<Record<string, unknown>> {
    if (this.isClosed || this.socket.readyState !== OPEN) {
      return Promise.reject(new AtriumError('CLOSED', 'The connection is not open.'));
    }
    const id = this.takeId();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new AtriumError('TIMEOUT', `No answer to ${type} within ${timeoutMs} ms.`, { requestId: id }));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      try {
        this.socket.send(encoder.encode({ t: type, id, d: payload }));
      } catch (error) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new AtriumError('CLOSED', `Sending ${type} failed: ${String(error)}`, { requestId: id }));
      }
    });
  }

  /** Ids increase and wrap after REQUEST_ID_MAX, skipping any still waiting for an answer. */
  private takeId(): number {
    let id = this.nextId;
    while (this.pending.has(id)) id = id >= REQUEST_ID_MAX ? 0 : id + 1;
    this.nextId = id >= REQUEST_ID_MAX ? 0 : id + 1;
    return id;
  }

  /** Never throws: frames it cannot decode or does not know are ignored. */
  private onMessage(data: unknown): void {
    let frame: unknown;
    try {
      const bytes =
        data instanceof ArrayBuffer
          ? new Uint8Array(data)
          : ArrayBuffer.isView(data)
            ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
            : undefined;
      if (!bytes) return;
      frame = decode(bytes);
    } catch {
      return;
    }
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return;
    const f = frame as Record<string, unknown>;
    if (typeof f.t !== 'string') return;
    const id = typeof f.id === 'number' ? f.id : undefined;
    switch (f.t) {
      case 'ack':
      case 'pong': {
        if (id === undefined) return;
        this.settle(id)?.resolve(f);
        return;
      }
      case 'error': {
        const error = new AtriumError(
          typeof f.code === 'string' ? f.code : 'INTERNAL',
          typeof f.message === 'string' ? f.message : 'The server refused the frame.',
          {
            ...(Array.isArray(f.errors) ? { errors: f.errors as FieldError[] } : {}),
            ...(typeof f.retry_after === 'number' ? { retryAfter: f.retry_after } : {}),
            ...(id === undefined ? {} : { requestId: id }),
          },
        );
        const pending = id === undefined ? undefined : this.settle(id);
        // An error for a request that already timed out is dropped like its late ack would be.
        if (pending) pending.reject(error);
        else if (id === undefined) for (const handler of [...this.errorHandlers]) this.invoke(handler, error);
        return;
      }
      default: {
        // A reset moves the stream's position like an event of that stream would.
        const reset = f.t === 'stream.reset' ? (f.d as StreamReset | undefined) : undefined;
        const pos = reset ? { ...reset.position, stream: reset.stream } : f.pos;
        if (isPosition(pos)) {
          const { stream, offset, epoch } = pos;
          if (typeof stream === 'string') this.streamPositions.set(stream, { offset, epoch });
          else this.position = { offset, epoch };
        }
        const handlers = this.eventHandlers.get(f.t);
        if (!handlers) return;
        for (const handler of [...handlers]) this.invoke(handler, f.d as never);
      }
    }
  }

  private settle(id: number): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    clearTimeout(entry.timer);
    return entry;
  }

  private invoke<P>(handler: (payload: P) => void, payload: P): void {
    try {
      handler(payload);
    } catch (error) {
      console.error('AtriumSocket: a frame handler threw', error);
    }
  }
}

function isPosition(value: unknown): value is StreamPosition & { stream?: unknown } {
  if (typeof value !== 'object' || value === null) return false;
  const { offset, epoch } = value as Record<string, unknown>;
  return typeof offset === 'number' && typeof epoch === 'string';
}
