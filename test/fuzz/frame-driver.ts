import { REQUEST_ID_MAX } from '../../protocol/frames.js';
import { type ReceivedFrame, TestSocket } from '../helpers/ws-client.js';
import { encodeFrame, type FrameCase } from './frame-cases.js';
import { documentedCodes, type Outcome, preview } from './harness.js';
import { releaseAll } from './values.js';

const ANSWER_TIMEOUT_MS = 5000;
/** Probe pings use ids from here up, so they never collide with the ids cases are given. */
const PROBE_ID_BASE = 4_000_000_000;
/** Codes that say the frame itself was refused: a clean frame must never get them. */
const REFUSALS = new Set(['MALFORMED_REQUEST', 'VALIDATION_FAILED', 'UNKNOWN_FRAME_TYPE']);
/** Close codes that would mean the server failed rather than refused. */
const SERVER_FAILURE_CLOSES = new Set([1011]);
/** Frames that answer a request: a ping's pong, or the ack or error of anything else. */
const ANSWERS = new Set(['pong', 'ack', 'error']);

export function describeFrameCase(c: FrameCase): string {
  const sent = encodeFrame(c, 1);
  const shown =
    typeof sent === 'string'
      ? `text ${preview(sent)}`
      : `bytes ${preview(Buffer.from(sent).toString('hex'))}`;
  return `[${c.labels.join(' | ')}] ${shown}`;
}

/**
 * Sends frame cases over two real connections, one authenticated as the fuzz user and one never
 * authenticated, and proves after each case that the gateway still answers a ping (on the same
 * connection, or on a new one when the server closed it).
 */
export class FrameDriver {
  private readonly sockets: { authed?: TestSocket; anonymous?: TestSocket } = {};
  private nextId = 1;
  private nextProbe = PROBE_ID_BASE;

  constructor(
    private readonly wsUrl: string,
    private readonly token: string,
    private readonly maxFrameBytes: number,
    /** Above this size uWS drops the connection instead of the gateway answering with an error. */
    private readonly hardCeilingBytes: number,
  ) {}

  private async socket(authed: boolean): Promise<TestSocket> {
    const key = authed ? 'authed' : 'anonymous';
    const current = this.sockets[key];
    if (current?.open) return current;
    const fresh = await TestSocket.connect(this.wsUrl);
    if (authed) {
      fresh.sendFrame({ t: 'auth', id: 0, d: { token: this.token } });
      const reply = await fresh.next((f) => f.id === 0 && ANSWERS.has(f.t), ANSWER_TIMEOUT_MS);
      if (reply.t !== 'ack')
        throw new Error(`the fuzz user could not authenticate: ${JSON.stringify(reply)}`);
    }
    this.sockets[key] = fresh;
    return fresh;
  }

  private async ping(socket: TestSocket): Promise<boolean> {
    const id = this.nextProbe;
    this.nextProbe = this.nextProbe >= REQUEST_ID_MAX ? PROBE_ID_BASE : this.nextProbe + 1;
    socket.sendFrame({ t: 'ping', id });
    // A closed connection answers nothing: stop waiting as soon as it closes.
    return Promise.race([
      socket
        .next((f) => f.t === 'pong' && f.id === id, ANSWER_TIMEOUT_MS)
        .then(
          () => true,
          () => false,
        ),
      socket.closed.then(() => false),
    ]);
  }

  /** Closes both connections, dropping their subscriptions, so the next batch starts clean. */
  recycle(): void {
    for (const socket of [this.sockets.authed, this.sockets.anonymous]) socket?.close();
    this.sockets.authed = undefined;
    this.sockets.anonymous = undefined;
  }

  async run(c: FrameCase): Promise<Outcome> {
    try {
      return await this.send(c);
    } finally {
      if (c.frame.kind === 'value') releaseAll(c.frame.entries);
      if (c.id.kind === 'hostile') c.id.value.release();
    }
  }

  private async send(c: FrameCase): Promise<Outcome> {
    const socket = await this.socket(c.authed);
    const id = c.id.kind === 'fresh' ? this.nextId++ : undefined;
    const message = encodeFrame(c, id);
    const size = typeof message === 'string' ? Buffer.byteLength(message) : message.byteLength;
    const awaited = id !== undefined && c.damage === 'none' && size <= this.maxFrameBytes;
    socket.sendRaw(message);

    const alive = await this.ping(socket);
    let reply: ReceivedFrame | undefined;
    // A frame that does not decode has no id to echo: its answer is an error without one, which
    // (being synchronous) arrives before the probe's pong.
    const refusedWithoutId = socket.frames.some((f) => f.t === 'error' && f.id === undefined);
    if (alive && awaited && !refusedWithoutId && socket.undecodable.length === 0) {
      reply = await socket
        .next((f) => f.id === id && ANSWERS.has(f.t), ANSWER_TIMEOUT_MS)
        .catch(() => undefined);
    }
    const received = [...(reply ? [reply] : []), ...socket.frames.splice(0)];
    const unreadable = socket.undecodable.splice(0)[0];
    let closeNote = '';
    if (!alive) {
      if (socket.open) {
        return {
          bucket: 'no pong',
          failure: `no pong within ${ANSWER_TIMEOUT_MS} ms on the still-open connection`,
        };
      }
      const { code } = await socket.closed;
      closeNote = ` closed ${code}`;
      const replacement = await this.socket(c.authed).catch(() => undefined);
      if (!replacement || !(await this.ping(replacement))) {
        return {
          bucket: `closed ${code}`,
          failure: `after the server closed the connection (${code}), a new one got no pong`,
        };
      }
      if (SERVER_FAILURE_CLOSES.has(code) || size <= this.hardCeilingBytes) {
        return {
          bucket: `closed ${code}`,
          failure: `the server closed the connection (${code}) after a ${size}-byte message`,
        };
      }
    }
    // An auth frame may have made the anonymous connection speak for a user (without an id, a
    // successful auth is not even acknowledged), so that connection is replaced.
    if (!c.authed && c.frame.kind === 'value' && c.frame.entries[0]?.[1] === 'auth') {
      socket.close();
      this.sockets.anonymous = undefined;
    }
    const failure =
      (unreadable
        ? `the server sent a frame msgpack decoders refuse (${unreadable.error}): ${unreadable.hex}`
        : undefined) ??
      checkFrames(received) ??
      (awaited && alive && !reply && !refusedWithoutId
        ? 'a request with a valid id got no answer'
        : undefined) ??
      (c.clean && reply?.t === 'error' && REFUSALS.has(String(reply.code))
        ? `a valid frame was refused with ${String(reply.code)}: ${JSON.stringify(reply.errors ?? reply.message)}`
        : undefined);
    const errorFrame = received.find((f) => f.t === 'error');
    const answer = reply
      ? reply.t === 'error'
        ? `error ${reply.code}`
        : reply.t
      : errorFrame
        ? `error ${errorFrame.code}${errorFrame.id === undefined ? ' (no id)' : ''}`
        : 'no answer';
    return { bucket: `${answer}${closeNote}`, ...(failure ? { failure } : {}) };
  }
}

/** Every error frame carries a documented code and a message, and none says the server failed. */
function checkFrames(frames: ReceivedFrame[]): string | undefined {
  for (const frame of frames) {
    if (frame.t !== 'error') continue;
    if (!documentedCodes.has(String(frame.code)))
      return `error frame with undocumented code ${JSON.stringify(frame.code)}`;
    if (typeof frame.message !== 'string') return `error frame ${String(frame.code)} without a message`;
    if (frame.code === 'INTERNAL') return `error frame INTERNAL: ${String(frame.message)}`;
  }
  return undefined;
}
