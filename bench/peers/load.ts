import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Decoder, Encoder } from '@msgpack/msgpack';
import autocannon from 'autocannon';
import WebSocket from 'ws';
import type {
  ConnectSpec,
  FramesSpec,
  LoadCommand,
  LoadReply,
  LoadWindow,
  RestSpec,
  Side,
  Spec,
} from './specs.js';

/**
 * A load process of the peers bench, one per server under test, forked with an IPC channel so
 * its work never shares the server's or the bench's event loop. The same code drives both
 * sides; only the wire differs: Atrium's msgpack frames `{t, id, d}` after an `auth` frame,
 * Nakama's JSON envelopes `{cid, ...}` on a socket whose URL carries the session token.
 */

/** Frames still unanswered this long after a window are counted as errors. */
const DRAIN_TIMEOUT_MS = 10_000;

interface Answer {
  id: number;
  error?: string;
  /** Nakama's answer envelope (its joined channel's id), parsed for a setup frame's answer. */
  body?: Record<string, unknown>;
}

interface Wire {
  url(base: string, token: string): string;
  authFrame(token: string): object | undefined;
  encode(frame: object, id: number): string | Uint8Array;
  /** The answer a message is, undefined for an event; read off its first bytes where it can be. */
  answer(data: Buffer): Answer | undefined;
  /** The whole answer, parsed: only for the setup frames awaited through `request`. */
  body?(data: Buffer): Record<string, unknown>;
}

/**
 * One codec for all of Atrium's frames, as the service has: @msgpack/msgpack's `encode` and
 * `decode` build a new codec (and its buffer) per call, which made this side's load process use
 * more CPU per frame than Nakama's JSON one on the cores both share with the servers.
 */
const encoder = new Encoder();
const decoder = new Decoder();

/** The frame types that answer a request; any other is an event. */
const ANSWER_TYPES = new Set(['ack', 'pong', 'error']);

/**
 * The `t` of an Atrium frame read off its first bytes, without decoding the rest: a msgpack fixmap
 * whose first key is the fixstr `t` and its value a fixstr, as the service writes every frame.
 * Undefined for any other layout, which is then decoded whole.
 */
function frameType(data: Buffer): string | undefined {
  const header = data[3] ?? 0;
  if (((data[0] ?? 0) & 0xf0) !== 0x80 || data[1] !== 0xa1 || data[2] !== 0x74 || (header & 0xe0) !== 0xa0)
    return undefined;
  return data.toString('latin1', 4, 4 + (header & 0x1f));
}

/** `frame` encoded once (a fixmap) and its `id` appended per request, the way a client reuses a message. */
const encodedFrames = new WeakMap<object, Uint8Array>();

function withId(frame: object, id: number): Uint8Array {
  let encoded = encodedFrames.get(frame);
  if (!encoded) {
    encoded = encoder.encode(frame);
    if (((encoded[0] as number) & 0xf0) !== 0x80 || encoded[0] === 0x8f) throw new Error('not a small map');
    encodedFrames.set(frame, encoded);
  }
  const idBytes = id < 0x80 ? [id] : id < 0x10000 ? [0xcd, id >> 8, id & 0xff] : [0xce, ...uint32(id)];
  const bytes = new Uint8Array(encoded.length + 3 + idBytes.length);
  bytes.set(encoded);
  bytes[0] = (encoded[0] as number) + 1; // one more key in the fixmap
  bytes.set([0xa2, 0x69, 0x64, ...idBytes], encoded.length); // "id"
  return bytes;
}

const uint32 = (n: number) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];

/**
 * The id of an `ack` or `pong` read off its bytes: the service writes `id` right after `t`. Undefined
 * for another layout, which is then decoded whole.
 */
function answeredId(data: Buffer, typeLength: number): number | undefined {
  const at = 4 + typeLength;
  if (data[at] !== 0xa2 || data[at + 1] !== 0x69 || data[at + 2] !== 0x64) return undefined;
  const first = data[at + 3] ?? 0xff;
  if (first < 0x80) return first;
  if (first === 0xcc) return data[at + 4];
  if (first === 0xcd) return data.readUInt16BE(at + 4);
  if (first === 0xce) return data.readUInt32BE(at + 4);
  return undefined;
}

/** A Nakama envelope's JSON without its opening brace, per frame object. */
const stringifiedFrames = new WeakMap<object, string>();

const WIRES: Record<Side, Wire> = {
  atrium: {
    url: (base) => base,
    authFrame: (token) => ({ t: 'auth', d: { token } }),
    encode: withId,
    answer(data) {
      // Events are not parsed, as on Nakama's side: group chat sends 50 per message.
      const type = frameType(data);
      if (type !== undefined && !ANSWER_TYPES.has(type)) return undefined;
      const id = type === 'ack' || type === 'pong' ? answeredId(data, type.length) : undefined;
      if (id !== undefined) return { id };
      const frame = decoder.decode(data) as { t?: string; id?: number; code?: string };
      if (frame.id === undefined) return undefined;
      return frame.t === 'ack' || frame.t === 'pong'
        ? { id: frame.id }
        : { id: frame.id, error: frame.code ?? String(frame.t) };
    },
  },
  nakama: {
    url: (base, token) => `${base}?token=${token}&format=json`,
    authFrame: () => undefined,
    // The frame stringified once and the cid put in front per request, as the Atrium side does.
    encode: (frame, id) => {
      let text = stringifiedFrames.get(frame);
      if (text === undefined) {
        text = JSON.stringify(frame).slice(1);
        stringifiedFrames.set(frame, text);
      }
      return text === '}' ? `{"cid":"${id}"}` : `{"cid":"${id}",${text}`;
    },
    answer(data) {
      // Nakama writes the cid first; events have none and are not parsed, nor is an answer but an
      // error's (as the Atrium side reads an ack's id off its bytes).
      if (data.toString('latin1', 0, 8) !== '{"cid":"') return undefined;
      const end = data.indexOf(0x22, 8);
      const id = Number(data.toString('latin1', 8, end));
      if (data.toString('latin1', end + 1, end + 10) !== ',"error":') return { id };
      const envelope = JSON.parse(data.toString()) as { error?: { message?: string } };
      return { id, error: envelope.error?.message ?? 'error' };
    },
    body: (data) => JSON.parse(data.toString()) as Record<string, unknown>,
  },
};

const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number);

/** A socket whose requests are answered by id. */
class Conn {
  private nextId = 1;
  private readonly waiting = new Map<number, (answer: Answer) => void>();
  /** Answers to frames not sent through `request`. */
  onAnswer: (answer: Answer) => void = () => {};

  constructor(
    readonly ws: WebSocket,
    private readonly wire: Wire,
  ) {
    ws.on('message', (data: Buffer) => {
      const answer = wire.answer(data);
      if (!answer) return;
      const waiter = this.waiting.get(answer.id);
      if (waiter) {
        this.waiting.delete(answer.id);
        waiter(answer.error || !wire.body ? answer : { ...answer, body: wire.body(data) });
      } else this.onAnswer(answer);
    });
  }

  send(frame: object): number {
    const id = this.nextId++;
    this.ws.send(this.wire.encode(frame, id));
    return id;
  }

  request(frame: object): Promise<Answer> {
    return new Promise((done) => this.waiting.set(this.send(frame), done));
  }
}

/** Opens a socket and authenticates it; resolves once the server accepted it. */
async function connect(side: Side, base: string, token: string): Promise<Conn> {
  const wire = WIRES[side];
  const ws = new WebSocket(wire.url(base, token), { perMessageDeflate: false });
  await new Promise<void>((done, fail) => {
    ws.once('open', () => done());
    ws.once('error', fail);
  });
  ws.on('error', () => {});
  const conn = new Conn(ws, wire);
  const auth = wire.authFrame(token);
  if (auth) {
    const answer = await conn.request(auth);
    if (answer.error) {
      ws.terminate();
      throw new Error(`auth refused: ${answer.error}`);
    }
  }
  return conn;
}

function close(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => ws.terminate(), 5_000);
    ws.once('close', () => {
      clearTimeout(timer);
      done();
    });
    ws.close(1000);
  });
}

interface Prepared {
  window(seconds: number): Promise<LoadWindow>;
  release(): Promise<void>;
}

async function prepareFrames(spec: FramesSpec): Promise<Prepared> {
  const conns = await Promise.all(
    spec.sockets.map(async ({ token, setup, frame }) => {
      const conn = await connect(spec.side, spec.url, token);
      let channel: unknown;
      for (const step of setup) {
        const answer = await conn.request(step);
        if (answer.error) throw new Error(`setup frame ${JSON.stringify(step)} refused: ${answer.error}`);
        channel = (answer.body?.channel as { id?: string } | undefined)?.id ?? channel;
      }
      const sent =
        frame && JSON.parse(JSON.stringify(frame).replaceAll('"$channel"', JSON.stringify(channel)));
      return { conn, frame: sent as object | null };
    }),
  );
  let errors: Record<string, number> = {};
  const count = (code: string) => {
    errors[code] = (errors[code] ?? 0) + 1;
  };
  let sending = false;
  let counting = false;
  let ops = 0;
  let latencies: number[] = [];
  let outstanding = 0;
  let onDrained = () => {};
  let releasing = false;
  const pumps = conns.map(({ conn, frame }) => {
    const sentAt = new Map<number, number>();
    const send = () => {
      if (!frame) return;
      outstanding++;
      sentAt.set(conn.send(frame), performance.now());
    };
    conn.onAnswer = (answer) => {
      outstanding--;
      const sent = sentAt.get(answer.id);
      sentAt.delete(answer.id);
      if (answer.error) count(answer.error);
      else if (counting) {
        ops++;
        if (sent !== undefined) latencies.push(performance.now() - sent);
      }
      if (sending) send();
      else if (outstanding <= 0) onDrained();
    };
    conn.ws.on('close', (code) => {
      if (!releasing) count(`socket closed (${code})`);
    });
    return { conn, send };
  });
  return {
    async window(seconds) {
      ops = 0;
      latencies = [];
      counting = true;
      sending = true;
      const started = performance.now();
      for (const { conn, send } of pumps) {
        if (conn.ws.readyState !== WebSocket.OPEN) continue;
        for (let i = 0; i < spec.inFlight; i++) send();
      }
      await sleep(seconds * 1000);
      counting = false;
      sending = false;
      const elapsed = (performance.now() - started) / 1000;
      const drained = new Promise<void>((done) => {
        onDrained = done;
        if (outstanding <= 0) done();
      });
      await Promise.race([drained, sleep(DRAIN_TIMEOUT_MS)]);
      if (outstanding > 0) {
        count('unanswered');
        outstanding = 0;
      }
      const sorted = Float64Array.from(latencies).sort();
      const windowErrors = errors;
      errors = {};
      return {
        ops,
        seconds: elapsed,
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
        errors: windowErrors,
      };
    },
    async release() {
      releasing = true;
      await Promise.all(conns.map(({ conn }) => close(conn.ws)));
    },
  };
}

async function prepareRest(spec: RestSpec): Promise<Prepared & { answerBytes: number }> {
  const headersOf = (token: string, body?: string): Record<string, string> => ({
    authorization: `Bearer ${token}`,
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(spec.idempotencyKey ? { 'idempotency-key': randomUUID() } : {}),
  });
  const { length } = spec.requests;
  let sent = 0;
  const pick = () => {
    if (!spec.usersInTurn) return Math.floor(Math.random() * length);
    const user = sent++ % spec.connections;
    const own = Math.ceil((length - user) / spec.connections);
    return user + spec.connections * Math.floor(Math.random() * own);
  };
  const [first] = spec.requests;
  if (!first) throw new Error('a REST row needs requests');
  const check = await fetch(`${spec.base}${first.path}`, {
    method: first.method,
    headers: headersOf(first.token, first.body),
    ...(first.body === undefined ? {} : { body: first.body }),
  });
  const text = await check.text();
  if (check.status >= 300) throw new Error(`${first.method} ${first.path} answered ${check.status}: ${text}`);
  return {
    answerBytes: Buffer.byteLength(text),
    async window(seconds) {
      const result = await autocannon({
        url: spec.base,
        connections: spec.connections,
        duration: seconds,
        requests: [
          {
            setupRequest: (request) => {
              const { method, path, token, body } = spec.requests[pick()] as RestSpec['requests'][number];
              return { ...request, method, path, headers: headersOf(token, body), body };
            },
          },
        ],
      });
      const errors: Record<string, number> = {};
      if (result.non2xx) errors.non2xx = result.non2xx;
      if (result.errors + result.timeouts) errors['connection errors'] = result.errors + result.timeouts;
      return {
        ops: result['2xx'],
        seconds: result.duration,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        errors,
      };
    },
    async release() {},
  };
}

function prepareConnect(spec: ConnectSpec): Prepared {
  let held: Conn[] = [];
  return {
    async window() {
      const errors: Record<string, number> = {};
      const latencies: number[] = [];
      let next = 0;
      const started = performance.now();
      const worker = async () => {
        while (next < spec.tokens.length) {
          const token = spec.tokens[next++] as string;
          const opened = performance.now();
          try {
            held.push(await connect(spec.side, spec.url, token));
            latencies.push(performance.now() - opened);
          } catch (error) {
            const reason = (error as Error).message;
            errors[reason] = (errors[reason] ?? 0) + 1;
          }
        }
      };
      await Promise.all(Array.from({ length: spec.inFlight }, worker));
      const sorted = Float64Array.from(latencies).sort();
      return {
        ops: latencies.length,
        seconds: (performance.now() - started) / 1000,
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
        errors,
      };
    },
    async release() {
      await Promise.all(held.map((conn) => close(conn.ws)));
      held = [];
    },
  };
}

function prepare(spec: Spec): Promise<Prepared & { answerBytes?: number }> | Prepared {
  if (spec.kind === 'frames') return prepareFrames(spec);
  if (spec.kind === 'rest') return prepareRest(spec);
  return prepareConnect(spec);
}

let current: (Prepared & { answerBytes?: number }) | undefined;

async function handle(command: LoadCommand): Promise<LoadReply> {
  try {
    if (command.op === 'prepare') {
      await current?.release();
      current = await prepare(command.spec);
      return { id: command.id, result: { answerBytes: current.answerBytes } };
    }
    if (!current) throw new Error('nothing prepared');
    if (command.op === 'window') return { id: command.id, result: await current.window(command.seconds) };
    await current.release();
    current = undefined;
    return { id: command.id, result: null };
  } catch (error) {
    return { id: command.id, error: (error as Error).stack ?? String(error) };
  }
}

process.on('message', (command: LoadCommand) => {
  handle(command).then((reply) => process.send?.(reply));
});
process.on('disconnect', () => process.exit(0));
