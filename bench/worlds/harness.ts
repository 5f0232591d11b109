import { decode, encode } from '@msgpack/msgpack';
import pg from 'pg';
import type WebSocket from 'ws';
import { encodeChunk } from '../../protocol/chunk-codec.js';
import { startEmbeddedPostgres } from '../../src/platform/embedded-postgres.js';
import { closeSocket } from '../realtime/ws-client.js';

/** What the world-content measurements share: the REST client, socket frames, SQL, payloads, percentiles. */

export const progress = (message: string) => console.log(`[bench:worlds] ${message}`);

/**
 * Benchmark settings of the service: tokens outlive the run, and one user creates every world of
 * it and holds every subscriber socket (more than the defaults of CREATE_RATE_LIMIT_COUNT and
 * WS_MAX_SOCKETS_PER_USER allow); the rest as bench/realtime/servers.ts.
 */
export const WORLDS_ENV = {
  ACCESS_TOKEN_TTL_SECONDS: '86400',
  CREATE_RATE_LIMIT_COUNT: '100000',
  WS_MAX_SOCKETS_PER_USER: '10000',
};

export interface Latency {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles of latencies in ms. */
export function latency(samples: readonly number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? Number.NaN };
}

/** Codec bytes of exactly `size` bytes: objects with pseudo-random floats (TOAST compression gains little), padded with props. */
export function chunkPayload(size: number): Uint8Array {
  const OBJECT_BYTES = 65; // 1 + 6 (id) + 1 + 13 (asset id) + 40 (floats) + 4 (props length)
  let count = Math.floor((size - 10) / OBJECT_BYTES);
  if (size - 10 - count * OBJECT_BYTES < 9) count -= 1;
  let seed = 0x2545f491;
  const floats = (n: number) => {
    const bits = new Uint32Array(n);
    for (let i = 0; i < n; i++) bits[i] = seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return new Float32Array(bits.buffer);
  };
  const objects = Array.from({ length: count }, (_, i) => ({
    id: `o${String(i).padStart(5, '0')}`,
    asset_id: 'asset.rock.01',
    position: floats(3),
    rotation: floats(4),
    scale: floats(3),
  }));
  const pad = size - 10 - count * OBJECT_BYTES - 8; // props {"p":"…"} take 8 bytes beside the text
  Object.assign(objects.at(-1) as object, { props: { p: 'x'.repeat(pad) } });
  const bytes = encodeChunk({ objects });
  if (bytes.length !== size) throw new Error(`chunkPayload built ${bytes.length} bytes, not ${size}`);
  return bytes;
}

/** A copy of `base` with bytes 31-32 (the first object's position x) set from `i`: still a valid chunk. */
export function variant(base: Uint8Array, i: number): Uint8Array {
  const bytes = base.slice();
  bytes[31] = i & 0xff;
  bytes[32] = (i >> 8) & 0xff;
  return bytes;
}

export interface Reply<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** The service's REST API as one user (after `register`). */
export class Api {
  token = '';
  userId = '';
  constructor(public base: string) {}

  async call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const binary = body instanceof Uint8Array;
    const response = await fetch(`${this.base}${path}`, {
      method,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(body === undefined
          ? {}
          : { 'content-type': binary ? 'application/octet-stream' : 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: binary ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    const parsed = text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
    return { status: response.status, body: parsed as T, headers: response.headers } satisfies Reply<T>;
  }

  /** A call that must answer 2xx. */
  async ok<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T> {
    const reply = await this.call<T>(method, path, body, headers);
    if (reply.status >= 300)
      throw new Error(`${method} ${path} answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    return reply.body;
  }

  async register(username: string): Promise<void> {
    const body = { username, password: 'correct horse battery', accept_terms: true, confirm_18_plus: true };
    const { access_token, user } = await this.ok<{ access_token: string; user: { id: string } }>(
      'POST',
      '/api/auth/register',
      body,
    );
    this.token = access_token;
    this.userId = user.id;
  }

  /** A new world: its id and its room `main`'s. */
  async world(name: string): Promise<{ worldId: string; roomId: string }> {
    const world = await this.ok<{ id: string; rooms: { id: string }[] }>('POST', '/api/worlds', { name });
    return { worldId: world.id, roomId: (world.rooms[0] as { id: string }).id };
  }

  async room(worldId: string, name: string): Promise<string> {
    return (await this.ok<{ id: string }>('POST', `/api/worlds/${worldId}/rooms`, { name })).id;
  }

  /** POST …/chunks/batch as application/msgpack (the writes, or their encoded body); answers the new revisions. */
  async batch(worldId: string, writes: Record<string, unknown>[] | Uint8Array): Promise<number[]> {
    const body = writes instanceof Uint8Array ? writes : encode({ writes });
    const reply = await this.call<{ revisions: number[] }>(
      'POST',
      `/api/worlds/${worldId}/chunks/batch`,
      body,
      {
        'content-type': 'application/msgpack',
      },
    );
    if (reply.status !== 200)
      throw new Error(`batch answered ${reply.status}: ${JSON.stringify(reply.body)}`);
    return reply.body.revisions;
  }
}

export interface Frame {
  t: string;
  id?: number;
  d?: unknown;
  code?: string;
  message?: string;
}

/** Request frames over an authenticated socket; other frames go to `onEvent` with their arrival time. */
export class Frames {
  private nextId = 10;
  private readonly pending = new Map<number, { done(d: unknown): void; fail(e: Error): void }>();
  onEvent: (frame: Frame, at: number) => void = () => {};

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const at = performance.now();
      const frame = decode(data) as Frame;
      const waiting = frame.id === undefined ? undefined : this.pending.get(frame.id);
      if (!waiting || (frame.t !== 'ack' && frame.t !== 'error')) return this.onEvent(frame, at);
      this.pending.delete(frame.id as number);
      if (frame.t === 'ack') waiting.done(frame.d);
      else waiting.fail(new Error(`${frame.code}: ${frame.message}`));
    });
  }

  request<T>(t: string, d: unknown): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((done, fail) => {
      this.pending.set(id, { done: done as (d: unknown) => void, fail });
      this.ws.send(encode({ t, id, d }));
    });
  }

  close(): Promise<void> {
    return closeSocket(this.ws);
  }
}

/** SQL on the service's database from the benchmark: Postgres through pg, or PGlite in this process. */
export interface Sql {
  /** `name` prepares the statement once on the connection, as the service's lean path does. */
  query<Row>(text: string, values?: unknown[], name?: string): Promise<Row[]>;
  close(): Promise<void>;
}

export async function postgresSql(url: string): Promise<Sql> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    query: async (text, values = [], name) =>
      (await client.query({ text, values, ...(name ? { name } : {}) })).rows,
    close: () => client.end(),
  };
}

/** PGlite on `dir` (a PGlite data directory no other process has open), queried in process. */
export async function pgliteSql(dir: string): Promise<Sql> {
  const embedded = await startEmbeddedPostgres({ dataDir: dir });
  return {
    query: async <Row>(text: string, values: unknown[] = []) =>
      (await embedded.pglite.query<Row>(text, values)).rows,
    close: () => embedded.close(),
  };
}
