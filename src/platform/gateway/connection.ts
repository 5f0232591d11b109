import { setImmediate as afterIo } from 'node:timers';
import { Encoder } from '@msgpack/msgpack';
import { CloseCode } from '../../../protocol/frames.js';
import type { Principal } from '../auth/principal.js';
import type { StreamPosition } from '../kv/kv.js';
import type { Expiring } from './expiry-queue.js';
import type { UwsWebSocket } from './uws.js';

const encoder = new Encoder({ ignoreUndefined: true });
const FRAME_WINDOW_MS = 1000;

/**
 * Connections with fan-out frames queued (Connection.queue), written once the event loop has run
 * this turn's I/O callbacks: the events one Redis read carries reach each socket in one write. On
 * loopback a write costs the TCP path of both ends, so a group chat at 500 messages/s spent most
 * of its CPU in one write per frame (bench/results/groups.md). Taken from node:timers so that
 * tests faking the global timers do not hold fan-out back.
 */
let queued: Connection[] = [];

function writeQueued(): void {
  const connections = queued;
  queued = [];
  for (const connection of connections) connection.flush();
}

export interface SocketData {
  connection?: Connection;
}

/**
 * One client's WebSocket as the rest of the service sees it. It survives the uWS socket: after
 * close, sends are dropped instead of touching a freed native handle, which matters because
 * handlers finish asynchronously and may answer after the client left.
 */
export class Connection implements Expiring {
  closed = false;
  /**
   * Set by a successful auth frame; frames other than ping and auth need it, and each frame admits
   * only some kinds (a service's socket only the frames of operations that take service tokens).
   */
  principal: Principal | undefined;
  /** The connection's number on this node (its place among the sockets of its user, SocketQuota). */
  number = 0;
  /** Topics this connection receives events from; created with the first subscription. */
  topics: Set<string> | undefined;
  /** Closes the connection unless it authenticates in time; cleared by the first auth frame. */
  authDeadline: NodeJS.Timeout | undefined;
  /** Kept by the sessions' token expiry queue while the connection is authenticated. */
  expirySecond: number | undefined;
  /**
   * Per recorded topic whose missed events the connection is being sent: the live events of that
   * topic wait here, to follow the replay in order (Replay.catchUp).
   */
  held: Map<string, { position: StreamPosition; bytes: Uint8Array }[]> | undefined;
  /** Run once when the connection closes (streams that keep per-connection state). */
  closeListeners: (() => void)[] | undefined;
  /**
   * The largest paced frame still possibly buffered: the slow-consumer limit stretches by it, so
   * one large chunk frame being read does not get a client closed for a small frame queued behind.
   */
  private pacedBytes = 0;
  /** Woken when uWS reports the socket drained (see `drained`). */
  private drainWaiters: (() => void)[] | undefined;
  /** The frame rate limit's fixed one-second window: when it started and the frames counted in it. */
  private windowStartedAt = 0;
  private framesInWindow = 0;
  /** Fan-out frames waiting for this turn's write (queue); sent before any later frame. */
  private outbox: Uint8Array[] | undefined;

  constructor(
    readonly remoteAddress: string,
    private readonly socket: UwsWebSocket<SocketData>,
    private readonly maxBufferedBytes: number,
    private readonly onSlowConsumer: (connection: Connection) => void,
  ) {}

  /**
   * Counts one received frame in the current one-second window and returns the count so far.
   * Kept on the connection: a shared limiter keyed by connection id cost a map entry and a timer
   * per socket, and a promise per frame.
   */
  countFrame(now: number): number {
    if (now - this.windowStartedAt >= FRAME_WINDOW_MS) {
      this.windowStartedAt = now;
      this.framesInWindow = 0;
    }
    return ++this.framesInWindow;
  }

  /** Milliseconds until the frame window ends and the count starts over. */
  msLeftInWindow(now: number): number {
    return Math.max(0, FRAME_WINDOW_MS - (now - this.windowStartedAt));
  }

  /** Encodes and sends one frame; returns false when the socket is gone. */
  send(frame: object): boolean {
    return this.sendEncoded(encoder.encode(frame));
  }

  /**
   * Encodes a frame and queues it like a fan-out frame (`queue`): for answers that come back from
   * a shared round trip (a Redis batch answers many sockets' frames at once), so the answers one
   * reply settles reach each socket in one write instead of one write each.
   */
  sendSoon(frame: object): void {
    this.queue(encoder.encode(frame));
  }

  /**
   * Sends an already encoded frame now, after any frames queued before it. A client that lets more
   * than the allowed bytes pile up is disconnected instead of buffering without bound: one slow
   * reader must not grow the server's memory.
   */
  sendEncoded(bytes: Uint8Array): boolean {
    if (this.outbox) this.flush();
    return this.write(bytes);
  }

  /**
   * Queues a fan-out frame (encoded once for all subscribers) for one write per connection after
   * this turn's I/O: the frames of several events leave in one syscall instead of one each.
   */
  queue(bytes: Uint8Array): void {
    if (this.closed) return;
    if (this.outbox) {
      this.outbox.push(bytes);
      return;
    }
    this.outbox = [bytes];
    if (queued.push(this) === 1) afterIo(writeQueued);
  }

  /** Writes the queued frames, corked into one syscall when there are several. */
  flush(): void {
    const frames = this.outbox;
    this.outbox = undefined;
    if (!frames || this.closed) return;
    if (frames.length === 1) {
      this.write(frames[0] as Uint8Array);
      return;
    }
    this.socket.cork(() => {
      for (const frame of frames) if (!this.write(frame)) return;
    });
  }

  private write(bytes: Uint8Array): boolean {
    if (this.closed) return false;
    const result = this.socket.send(bytes, true);
    // uWS answers 1 when nothing is left buffered (a fan-out's common case: no second native call),
    // 0 when bytes wait to be written, 2 when it dropped the message at its backpressure ceiling.
    if (result === 1) return true;
    if (result === 2 || this.socket.getBufferedAmount() > this.maxBufferedBytes + this.pacedBytes) {
      this.onSlowConsumer(this);
      this.close(CloseCode.SLOW_CONSUMER, 'slow consumer');
      return false;
    }
    return true;
  }

  /** Bytes written to the socket that the client has not read yet. */
  get bufferedBytes(): number {
    return this.closed ? 0 : this.socket.getBufferedAmount();
  }

  /**
   * Sends a frame whose sender paces itself (bulk loads, chunk streams) by watching
   * `bufferedBytes` and `drained()`: such a frame may be large, so it does not count against the
   * slow-consumer limit. Returns 'dropped' when uWS refused it at its backpressure ceiling.
   */
  sendPaced(bytes: Uint8Array): 'sent' | 'dropped' | 'closed' {
    if (this.outbox) this.flush();
    if (this.closed) return 'closed';
    this.pacedBytes = Math.max(this.pacedBytes, bytes.byteLength);
    return this.socket.send(bytes, true) === 2 ? 'dropped' : 'sent';
  }

  /** Resolves once the client has read what was buffered down to `belowBytes`, or the socket closed. */
  async drained(belowBytes: number): Promise<void> {
    while (!this.closed && this.socket.getBufferedAmount() > belowBytes) {
      await new Promise<void>((wake) => {
        this.drainWaiters ??= [];
        this.drainWaiters.push(wake);
      });
    }
  }

  /** Called by the gateway on uWS's drain event and on close. */
  wakeDrainWaiters(): void {
    if (this.bufferedBytes <= this.maxBufferedBytes) this.pacedBytes = 0;
    const waiters = this.drainWaiters;
    this.drainWaiters = undefined;
    for (const wake of waiters ?? []) wake();
  }

  /** Closes with a WebSocket close code and a short reason (at most 123 bytes by the protocol). */
  close(code: number, reason: string): void {
    // Frames queued before the close still go out first; a slow reader found doing so is closed as one.
    if (this.outbox) this.flush();
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.authDeadline);
    this.socket.end(code, reason.slice(0, 120));
  }
}
