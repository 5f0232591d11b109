import type { z } from 'zod';
import type { userAuthAckSchema } from './auth.js';
import { chatStream } from './chat-stream.js';
import type { EventPayloads } from './frames.js';
import type { Operation, OutputOf, SentInputOf } from './operation.js';
import { type OperationName, type Operations, operations } from './operations.js';
import { type ReconnectOptions, reconnectDelayMs } from './reconnect.js';
import { type FetchLike, RestTransport } from './rest-transport.js';
import type { RequestArgs, RequestType, WebSocketConstructorLike, WebSocketLike } from './socket.js';
import { AtriumError, AtriumSocket } from './socket.js';
import { type MissedEvents, missedIn, type StreamPosition } from './stream-position.js';

export type { ReconnectOptions } from './reconnect.js';
export type { FetchLike } from './rest-transport.js';

/**
 * One typed client for both transports: every operation is one `call`, answered over the socket or
 * over REST with the same result types and AtriumError codes. See protocol/README.md#using-atriumclient.
 */

/**
 * - `offline`: no socket and none coming until `setAccessToken` gives a (new) token: there is no
 *   token, the server refused it, or the client has no `wsUrl`.
 * - `connecting` / `authenticating`: opening the socket / waiting for the auth ack.
 * - `ready`: authenticated; frames go over the socket. Reached after every successful auth, on a
 *   new connection or after a token change, so it is where subscriptions are (re)made.
 * - `reconnecting`: the socket went down unexpectedly; the next attempt is scheduled.
 * - `closed`: `close()` was called; every call fails with CLOSED.
 */
export type ConnectionState =
  | 'offline'
  | 'connecting'
  | 'authenticating'
  | 'ready'
  | 'reconnecting'
  | 'closed';

export interface AtriumClientOptions {
  /** Base URL of the REST API, e.g. `http://127.0.0.1:8080`. */
  httpUrl: string;
  /** The gateway, e.g. `ws://127.0.0.1:8081/ws`. Without it the client uses REST only. */
  wsUrl?: string;
  /** The WebSocket implementation; defaults to `globalThis.WebSocket`. On Node 20 pass `ws`'s export. */
  WebSocket?: WebSocketConstructorLike;
  /** Defaults to the global fetch. */
  fetch?: FetchLike;
  accessToken?: string | null;
  /** How long a call waits for its answer (and a socket-only call for the socket). Default 10 000 ms. */
  requestTimeoutMs?: number;
  reconnect?: ReconnectOptions;
}

/** The input argument is optional only for operations that take none. */
export type CallArgs<N extends OperationName> =
  undefined extends SentInputOf<Operations[N]>
    ? [input?: SentInputOf<Operations[N]>]
    : [input: SentInputOf<Operations[N]>];
export type CallResult<N extends OperationName> = OutputOf<Operations[N]>;
/** A user's auth ack: the client speaks for a user (a game server's socket uses AtriumSocket). */
export type AuthAck = z.output<typeof userAuthAckSchema>;

export type { MissedEvents };

type ChatJoinInput = SentInputOf<Operations['chat.join']>;
type RpcInput = SentInputOf<Operations['rpc']>;

export class AtriumClient {
  private currentState: ConnectionState = 'offline';
  /** Why the client went offline or is reconnecting, when there is a reason. */
  private cause: AtriumError | undefined;
  private token: string | null;
  private session: AuthAck | undefined;
  private socket: AtriumSocket | undefined;
  /** The WebSocket of the latest attempt, so that a teardown can abort a handshake in flight too. */
  private rawSocket: WebSocketLike | undefined;
  /** Bumped by every teardown: callbacks of an older attempt see a stale value and do nothing. */
  private generation = 0;
  private failedAttempts = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly eventHandlers = new Map<string, Set<(payload: never) => void>>();
  private readonly stateListeners = new Set<(state: ConnectionState, cause?: AtriumError) => void>();
  private readonly missedEventsListeners = new Set<(missed: MissedEvents) => void>();
  /** Where the last socket stood in the user's event stream: the next one recovers from here. */
  private position: StreamPosition | undefined;
  /** The same for joined chats, by stream name (`chat:<world_id>[:<room_id>]`). */
  private readonly streamPositions = new Map<string, StreamPosition>();
  private readonly rest: RestTransport;
  private readonly wsUrl: string | undefined;
  private readonly WebSocket: WebSocketConstructorLike | undefined;
  private readonly requestTimeoutMs: number;
  private readonly reconnect: ReconnectOptions;

  constructor(options: AtriumClientOptions) {
    this.wsUrl = options.wsUrl;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    this.reconnect = options.reconnect ?? {};
    // Looked up per call and called unbound: browsers refuse a fetch called as a method of another object.
    const fetch: FetchLike =
      options.fetch ?? ((url, init) => (globalThis as unknown as { fetch: FetchLike }).fetch(url, init));
    this.rest = new RestTransport(options.httpUrl.replace(/\/+$/, ''), fetch, this.requestTimeoutMs);
    const WebSocketImpl =
      options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructorLike }).WebSocket;
    if (this.wsUrl && !WebSocketImpl)
      throw new TypeError('No WebSocket: pass options.WebSocket (Node 20: ws).');
    const client = this;
    this.WebSocket =
      WebSocketImpl &&
      class extends WebSocketImpl {
        constructor(url: string) {
          super(url);
          client.rawSocket = this;
        }
      };
    this.token = options.accessToken ?? null;
    if (this.token !== null && this.wsUrl) this.connect();
  }

  get state(): ConnectionState {
    return this.currentState;
  }

  /**
   * Calls an operation: over the socket when it is `ready` and the operation is a frame, over REST
   * otherwise. Socket-only operations wait for `ready` up to the request timeout (then CLOSED), and
   * fail at once when the client is offline or closed. `auth` sets the access token and resolves
   * with the ack of the authentication it starts.
   */
  async call<N extends OperationName>(name: N, ...args: CallArgs<N>): Promise<CallResult<N>> {
    const op: Operation = operations[name];
    const input: unknown = args[0];
    if (this.currentState === 'closed') throw new AtriumError('CLOSED', 'The client is closed.');
    if (op.name === 'auth') {
      this.setAccessToken((input as { token?: string } | undefined)?.token ?? null);
      return (await this.ready()) as CallResult<N>;
    }
    if (op.name === 'chat.join') return (await this.joinChat(input as ChatJoinInput)) as CallResult<N>;
    if (op.frame && this.currentState === 'ready' && this.socket) {
      return (await this.overSocket(this.socket, op.name, input, this.requestTimeoutMs)) as CallResult<N>;
    }
    if (op.rest) return (await this.rest.call(op, op.rest, input, this.token)) as CallResult<N>;
    if (op.name === 'rpc') return (await this.rest.rpc(input as RpcInput, this.token)) as CallResult<N>;
    const { socket, msLeft } = await this.readySocket();
    return (await this.overSocket(socket, op.name, input, msLeft)) as CallResult<N>;
  }

  /** A server extension's rpc, called as `call('rpc', {name, input})`: resolves with its `result`. */
  async rpc<R = unknown>(name: string, input?: unknown): Promise<R> {
    return (await this.call('rpc', { name, input })).result as R;
  }

  /**
   * The token for REST calls and the socket's auth. A new token re-authenticates an open socket,
   * opens one when the client was offline; null closes the socket.
   */
  setAccessToken(token: string | null): void {
    const changed = token !== this.token;
    this.token = token;
    if (this.currentState === 'closed' || !this.wsUrl) return;
    if (token === null) {
      if (changed) this.goOffline();
    } else if (this.currentState === 'offline') {
      this.connect();
    } else if (changed && this.socket) {
      this.authenticate(this.socket, this.generation);
    }
  }

  /** Resolves with the auth ack once the socket is `ready`; rejects like a socket-only call. */
  async ready(timeoutMs = this.requestTimeoutMs): Promise<AuthAck> {
    await this.whenReady(timeoutMs);
    return this.session as AuthAck;
  }

  /** Calls `handler` for each server event of `type`, across reconnects; returns a function that removes it. */
  on<T extends keyof EventPayloads>(type: T, handler: (payload: EventPayloads[T]) => void): () => void {
    const handlers = this.eventHandlers.get(type) ?? new Set();
    if (!this.eventHandlers.has(type)) {
      this.eventHandlers.set(type, handlers);
      if (this.socket) this.forwardEvents(this.socket, type);
    }
    const entry = handler as (payload: never) => void;
    handlers.add(entry);
    return () => {
      handlers.delete(entry);
    };
  }

  /** Calls `listener` on every state change, with the error that caused it when there is one. */
  onStateChange(listener: (state: ConnectionState, cause?: AtriumError) => void): () => void {
    this.stateListeners.add(listener);
    return () => {
      this.stateListeners.delete(listener);
    };
  }

  /**
   * Calls `listener` when a reconnect could not replay every event missed while disconnected (the
   * server no longer had them all): refetch what you show through the history routes. For the
   * user's stream (`{stream: 'user'}`): DM conversations and histories, friend lists; for a chat
   * joined again (`{stream: 'chat', world_id, room_id}`, or `{stream: 'group', group_id}`): that
   * chat's history (a group's roster events too: reread its roster). When it could, the
   * missed events went to the `on` handlers, in order, before the client became `ready` again
   * (before the `chat.join` call resolved, for a chat).
   */
  onMissedEvents(listener: (missed: MissedEvents) => void): () => void {
    this.missedEventsListeners.add(listener);
    return () => {
      this.missedEventsListeners.delete(listener);
    };
  }

  /** Closes the socket, stops reconnecting and fails calls still waiting with CLOSED. */
  close(): void {
    if (this.currentState === 'closed') return;
    this.teardown();
    this.rest.abortAll(new AtriumError('CLOSED', 'The client was closed.'));
    this.setState('closed');
  }

  private overSocket(socket: AtriumSocket, name: string, input: unknown, ms: number): Promise<unknown> {
    if (name === 'ping') return socket.ping(ms).then(({ serverTime }) => ({ ts: serverTime }));
    return socket.request(name as RequestType, ...([input, ms] as RequestArgs<RequestType>));
  }

  /** Each handler is guarded on its own, so a throwing one neither stops the others nor the socket. */
  private forwardEvents(socket: AtriumSocket, type: string): void {
    socket.on(type as keyof EventPayloads, (payload) => {
      for (const handler of [...(this.eventHandlers.get(type) ?? [])])
        guarded('an event handler', () => handler(payload as never));
    });
  }

  private connect(): void {
    const generation = ++this.generation;
    this.retryTimer = undefined;
    this.setState('connecting');
    AtriumSocket.connect(this.wsUrl as string, {
      WebSocket: this.WebSocket as WebSocketConstructorLike,
      requestTimeoutMs: this.requestTimeoutMs,
      connectTimeoutMs: this.requestTimeoutMs,
    }).then(
      (socket) => {
        if (generation !== this.generation) {
          socket.close();
          return;
        }
        this.socket = socket;
        for (const type of this.eventHandlers.keys()) this.forwardEvents(socket, type);
        socket.on('stream.reset', ({ stream }) => this.reportMissed(missedIn(stream)));
        void socket.closed.then(({ code, reason }) => {
          this.keepPosition(socket);
          if (generation !== this.generation) return;
          this.retry(new AtriumError('CLOSED', `The socket closed (${code}${reason ? `: ${reason}` : ''}).`));
        });
        this.authenticate(socket, generation);
      },
      (error: AtriumError) => {
        if (generation === this.generation) this.retry(error);
      },
    );
  }

  private authenticate(socket: AtriumSocket, generation: number): void {
    const token = this.token as string;
    this.setState('authenticating');
    // Only a new connection recovers: a token change on this one keeps its stream.
    const recover = socket.position === undefined ? this.position : undefined;
    const previousUser = this.session?.user_id;
    socket.auth(token, undefined, recover).then(
      (ack) => {
        if (generation !== this.generation || token !== this.token) return;
        this.session = ack as AuthAck;
        this.failedAttempts = 0;
        this.keepPosition(socket);
        // A position of another user's stream (a new login) recovers nothing the app had shown.
        if (this.session.recovered === false && this.session.user_id === previousUser)
          this.reportMissed({ stream: 'user' });
        this.setState('ready');
      },
      (error: AtriumError) => {
        if (generation !== this.generation || token !== this.token) return;
        // A refused token stays refused: reconnecting with it would only be refused again.
        if (error.code === 'UNAUTHENTICATED' || error.code === 'VALIDATION_FAILED') this.goOffline(error);
        else this.retry(error);
      },
    );
  }

  private keepPosition(socket: AtriumSocket): void {
    if (socket.position) this.position = socket.position;
    for (const [stream, position] of socket.streamPositions) this.streamPositions.set(stream, position);
  }

  /**
   * `chat.join` over the ready socket, recovering from the position an earlier socket reached in
   * that chat unless the caller passes its own `recover`.
   */
  private async joinChat(input: ChatJoinInput): Promise<CallResult<'chat.join'>> {
    const { socket, msLeft } = await this.readySocket();
    const stream = chatStream(input);
    const recover = input.recover ?? (stream ? this.streamPositions.get(stream) : undefined);
    const ack = (await this.overSocket(
      socket,
      'chat.join',
      { ...input, recover },
      msLeft,
    )) as CallResult<'chat.join'>;
    if (ack.position) socket.streamPositions.set(chatStream(ack) as string, ack.position);
    if (ack.recovered === false && input.recover === undefined)
      this.reportMissed(
        'group_id' in ack
          ? { stream: 'group', group_id: ack.group_id }
          : { stream: 'chat', world_id: ack.world_id, room_id: ack.room_id },
      );
    return ack;
  }

  /** The socket once `ready` (waiting up to the request timeout), and what is left of that timeout. */
  private async readySocket(): Promise<{ socket: AtriumSocket; msLeft: number }> {
    const started = Date.now();
    const socket = await this.whenReady(this.requestTimeoutMs);
    return { socket, msLeft: Math.max(1, this.requestTimeoutMs - (Date.now() - started)) };
  }

  private reportMissed(missed: MissedEvents): void {
    for (const listener of [...this.missedEventsListeners])
      guarded('a missed-events listener', () => listener(missed));
  }

  private retry(cause: AtriumError): void {
    this.teardown();
    const delay = reconnectDelayMs(this.reconnect, this.failedAttempts);
    this.failedAttempts++;
    this.retryTimer = setTimeout(() => this.connect(), delay);
    this.setState('reconnecting', cause);
  }

  private goOffline(cause?: AtriumError): void {
    this.teardown();
    this.failedAttempts = 0;
    this.setState('offline', cause);
  }

  /** Drops the socket (or the attempt in flight) and the scheduled reconnect, on purpose. */
  private teardown(): void {
    this.generation++;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.socket = undefined;
    this.rawSocket?.close(1000);
    this.rawSocket = undefined;
  }

  private setState(state: ConnectionState, cause?: AtriumError): void {
    this.currentState = state;
    this.cause = cause;
    for (const listener of [...this.stateListeners])
      guarded('a state listener', () => listener(state, cause));
  }

  /** The ready socket, the error a socket-only call gets now, or undefined while it may still come. */
  private readiness(): AtriumSocket | AtriumError | undefined {
    if (this.currentState === 'ready') return this.socket;
    if (this.currentState === 'closed') return new AtriumError('CLOSED', 'The client is closed.');
    if (this.currentState !== 'offline') return undefined;
    if (this.cause) return this.cause;
    if (!this.wsUrl) return new AtriumError('CLOSED', 'This client has no wsUrl, so no socket.');
    return new AtriumError('UNAUTHENTICATED', 'No access token: the socket opens once one is set.');
  }

  private whenReady(timeoutMs: number): Promise<AtriumSocket> {
    const now = this.readiness();
    if (now instanceof AtriumSocket) return Promise.resolve(now);
    if (now) return Promise.reject(now);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new AtriumError('CLOSED', `The socket was not ready within ${timeoutMs} ms.`));
      }, timeoutMs);
      const off = this.onStateChange(() => {
        const outcome = this.readiness();
        if (!outcome) return;
        clearTimeout(timer);
        off();
        if (outcome instanceof AtriumSocket) resolve(outcome);
        else reject(outcome);
      });
    });
  }
}

function guarded(what: string, run: () => void): void {
  try {
    run();
  } catch (error) {
    console.error(`AtriumClient: ${what} threw`, error);
  }
}
