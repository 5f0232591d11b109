/** What the bench asks of its load processes (bench/peers/load.ts), over their IPC channel. */

export type Side = 'atrium' | 'nakama';

/**
 * Frames over sockets, each socket its own user: its `setup` frames are sent and answered in
 * turn, then it keeps `inFlight` copies of `frame` outstanding (none when `frame` is null: it
 * only receives). In a Nakama frame the string "$channel" stands for the id of the channel the
 * last setup frame joined.
 */
export interface FramesSpec {
  kind: 'frames';
  side: Side;
  url: string;
  sockets: { token: string; setup: object[]; frame: object | null }[];
  inFlight: number;
}

/** HTTP requests on `connections` keep-alive connections, each request one of `requests` at random. */
export interface RestSpec {
  kind: 'rest';
  base: string;
  requests: { method: 'GET' | 'POST' | 'PUT'; path: string; token: string; body?: string }[];
  /**
   * Request n is one of user n % connections's (request i is user i % connections's): with one
   * request in flight per connection, a user's requests seldom overlap, as a real user's do not.
   */
  usersInTurn?: boolean;
  /** A fresh Idempotency-Key header on each request. */
  idempotencyKey?: boolean;
  connections: number;
}

/** A window opens and authenticates one socket per token, `inFlight` at a time, and holds them until released. */
export interface ConnectSpec {
  kind: 'connect';
  side: Side;
  url: string;
  tokens: string[];
  inFlight: number;
}

export type Spec = FramesSpec | RestSpec | ConnectSpec;

export type LoadRequest =
  | { op: 'prepare'; spec: Spec }
  | { op: 'window'; seconds: number }
  | { op: 'release' };
export type LoadCommand = LoadRequest & { id: number };

export interface LoadWindow {
  /** Operations answered within the window (acks, 2xx answers, authenticated sockets). */
  ops: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** By code or reason; non-2xx answers as `HTTP <status>`. */
  errors: Record<string, number>;
}

export interface Prepared {
  /** Bytes of one answer, for REST rows (a check request sent before the rounds). */
  answerBytes?: number;
}

export type LoadReply = { id: number; result: LoadWindow | Prepared | null } | { id: number; error: string };
