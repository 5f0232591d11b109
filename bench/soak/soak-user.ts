import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';
import { reconnectDelayMs } from '../../protocol/reconnect.js';
import type { StreamPosition } from '../../protocol/stream-position.js';
import type { Ledger } from './ledger.js';

/**
 * One user of the soak and its one socket, as a well-behaved client keeps it: authenticated,
 * joined to its world's chat, subscribed to its peer's presence; when the socket drops (its node
 * was killed) it reconnects to a node that is up and resumes with the positions of the last
 * events it received, so the events it missed are replayed or it is told `recovered: false`.
 * Everything it receives and is told goes into the ledger.
 */

export interface Frame {
  t: string;
  id?: number;
  d?: unknown;
  code?: string;
  pos?: StreamPosition & { stream?: string };
  [field: string]: unknown;
}

/** A request that was answered with an error frame. */
export class Refused extends Error {
  constructor(readonly frame: Frame) {
    super(`${frame.code}: ${String(frame.message)}`);
  }
}

/** A request whose socket closed before an answer came (or that no answer reached in time). */
export class Unanswered extends Error {}

const REQUEST_TIMEOUT_MS = 20_000;

export class SoakUser {
  private ws: WebSocket | undefined;
  private nextId = 2;
  private readonly pending = new Map<number, { done(d: unknown): void; fail(e: Error): void }>();
  /** Where the user's own stream and its world chat stood at the last event received. */
  private userPosition: StreamPosition | undefined;
  private chatPosition: StreamPosition | undefined;
  /** Authenticated, joined and subscribed: ready for load. */
  ready = false;
  /** The node it is connected to (or connecting to). */
  node = -1;
  /** The peer's presence as this client last heard it (subscribe ack or event). */
  peerPresence: string | undefined;
  /** Set when the soak no longer wants this user connected: a drop is not followed by a reconnect. */
  stopped = false;

  constructor(
    readonly id: string,
    readonly token: string,
    readonly peerId: string,
    readonly worldId: string,
    private readonly ledger: Ledger,
    /** The ws URL of a node to (re)connect to, and its index; undefined while none is up. */
    private readonly pickNode: () => { index: number; url: string } | undefined,
  ) {}

  /** Connects, authenticates (with `recover` after the first time), joins and subscribes. */
  async connect(): Promise<void> {
    const target = this.pickNode();
    if (!target) throw new Unanswered('no node is up');
    this.node = target.index;
    const ws = new WebSocket(target.url, { perMessageDeflate: false, handshakeTimeout: 10_000 });
    this.ws = ws;
    ws.on('message', (data: Buffer) => this.onFrame(decode(data) as Frame));
    ws.on('close', () => this.onClose(ws));
    ws.on('error', () => {}); // 'close' follows and handles it
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('close', () => reject(new Unanswered('closed before it opened')));
    });
    const recovering = this.userPosition !== undefined;
    const auth = await this.send<{ position?: StreamPosition; recovered?: boolean }>(
      'auth',
      { token: this.token, ...(recovering ? { recover: this.userPosition } : {}) },
      1,
    );
    if (recovering) this.recovery('user', auth.recovered === true);
    if (auth.position) this.userPosition = auth.position;
    const chatRecovering = this.chatPosition !== undefined;
    const joined = await this.request<{ position?: StreamPosition; recovered?: boolean }>('chat.join', {
      world_id: this.worldId,
      ...(chatRecovering ? { recover: this.chatPosition } : {}),
    });
    if (chatRecovering) this.recovery('chat', joined.recovered === true);
    if (joined.position) this.chatPosition = joined.position;
    const subscribed = await this.request<{ presence: Record<string, string> }>('presence.subscribe', {
      user_ids: [this.peerId],
    });
    this.peerPresence = subscribed.presence[this.peerId];
    this.ready = true;
  }

  /**
   * Connects until it succeeds (nodes may be down, starting or refusing with 503), unless the user
   * was stopped, waiting between attempts as AtriumClient does (exponential, with jitter).
   */
  async connectWithRetries(): Promise<void> {
    for (let failed = 1; !this.stopped; failed++) {
      try {
        await this.connect();
        return;
      } catch (error) {
        const reason = error instanceof Refused ? String(error.frame.code) : (error as Error).message;
        this.ledger.connectFailures.set(reason, (this.ledger.connectFailures.get(reason) ?? 0) + 1);
        this.ws?.terminate();
        await new Promise((resolve) => setTimeout(resolve, reconnectDelayMs({}, failed)));
      }
    }
  }

  request<T>(t: string, d?: unknown): Promise<T> {
    return this.send<T>(t, d, this.nextId++);
  }

  /** Closes the socket without reconnecting. */
  close(): void {
    this.stopped = true;
    this.ready = false;
    this.ws?.close(1000);
  }

  /** Forgets the socket without closing it: for users whose node is killed at the end. */
  abandon(): void {
    this.stopped = true;
  }

  private send<T>(t: string, d: unknown, id: number): Promise<T> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new Unanswered('not connected'));
    return new Promise<T>((done, fail) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        fail(new Unanswered('no answer in time'));
      }, REQUEST_TIMEOUT_MS);
      this.pending.set(id, {
        done: (value) => {
          clearTimeout(timer);
          done(value as T);
        },
        fail: (error) => {
          clearTimeout(timer);
          fail(error);
        },
      });
      ws.send(encode({ t, id, ...(d === undefined ? {} : { d }) }));
    });
  }

  private recovery(stream: 'user' | 'chat', recovered: boolean): void {
    if (recovered) this.ledger.recoveries.recovered++;
    else {
      this.ledger.recoveries.notRecovered++;
      this.ledger.tellsLost(this.id, stream);
    }
  }

  private onFrame(frame: Frame): void {
    if ((frame.t === 'ack' || frame.t === 'error') && frame.id !== undefined) {
      const waiting = this.pending.get(frame.id);
      this.pending.delete(frame.id);
      if (frame.t === 'ack') waiting?.done(frame.d);
      else waiting?.fail(new Refused(frame));
      return;
    }
    if (frame.t === 'dm.message') {
      this.ledger.receivedBy(this.id, (frame.d as { id: string }).id);
      if (frame.pos) this.userPosition = { offset: frame.pos.offset, epoch: frame.pos.epoch };
    } else if (frame.t === 'chat.message') {
      this.ledger.receivedBy(this.id, (frame.d as { id: string }).id);
      if (frame.pos) this.chatPosition = { offset: frame.pos.offset, epoch: frame.pos.epoch };
    } else if (frame.t === 'stream.reset') {
      // The node could not fill a gap in this stream from its history (docs/recovery.md): the same
      // promise as `recovered: false`, and the stream goes on from the position it names.
      const { stream, position } = frame.d as { stream?: string; position?: StreamPosition };
      this.recovery(stream ? 'chat' : 'user', false);
      if (stream) this.chatPosition = position;
      else this.userPosition = position;
    } else if (frame.t === 'presence') {
      const { user_id, status } = frame.d as { user_id: string; status: string };
      if (user_id === this.peerId) this.peerPresence = status;
    } else if (frame.pos && !frame.pos.stream) {
      // Other events of the user's own stream (none in this load) still move its position.
      this.userPosition = { offset: frame.pos.offset, epoch: frame.pos.epoch };
    }
  }

  private onClose(ws: WebSocket): void {
    if (ws !== this.ws) return;
    const established = this.ready;
    this.ready = false;
    for (const waiting of this.pending.values()) waiting.fail(new Unanswered('connection lost'));
    this.pending.clear();
    // A connection that drops while being set up is retried by connectWithRetries.
    if (this.stopped || !established) return;
    this.ledger.reconnects++;
    setTimeout(() => void this.connectWithRetries(), reconnectDelayMs({}, 0));
  }
}
