import type { ErrorCode } from '../../protocol/errors.js';
import { httpStatusFor } from '../../src/platform/errors.js';

/**
 * The load client's own records, which the reconciliation checks against the database and
 * against each other: every acknowledged write, every event each user received, every
 * `recovered: false` a user was told, and every failed answer with its time. Times are
 * milliseconds since the load started.
 */

export interface AckedDm {
  id: string;
  senderId: string;
  recipientId: string;
  /** When the send left the client: a miss is excused by a `recovered: false` told after it. */
  sentAt: number;
}

export interface AckedChat {
  id: string;
  worldId: string;
  sentAt: number;
}

export interface AckedRevision {
  revision: number;
  roomId: string;
  x: number;
}

/** A failed answer: an HTTP status of 500 or more, or an error frame whose code maps to one. */
export interface ServerError {
  at: number;
  status: number;
  code: string;
  what: string;
}

export type StreamKind = 'user' | 'chat';

export class Ledger {
  /** Set again when the load starts, so that the report's times match the progress lines. */
  private startedAt = performance.now();
  readonly dms: AckedDm[] = [];
  readonly chats: AckedChat[] = [];
  readonly revisions: AckedRevision[] = [];
  /** Per user: the ids of the direct messages and chat messages it received (live or replayed). */
  readonly received = new Map<string, Set<string>>();
  /** Events a user received more than once. */
  duplicates = 0;
  /** Per user and stream: when the user was told `recovered: false` for it. */
  readonly toldLost = new Map<string, number[]>();
  /** Auth frames and chat joins that sent `recover` (retried attempts included), by answer. */
  readonly recoveries = { recovered: 0, notRecovered: 0 };
  readonly serverErrors: ServerError[] = [];
  /** The reasons nodes logged for answering SERVICE_UNAVAILABLE (a dependency failed), with when. */
  readonly unavailableReasons: { at: number; reason: string }[] = [];
  /** Error answers below 500, by operation and code (conflicts, rate limits, ...). */
  readonly refusals = new Map<string, number>();
  /** Requests whose connection went away before an answer (a node killed under them). */
  unanswered = 0;
  /** Failed attempts to connect (and authenticate, join, subscribe), by reason; each is retried. */
  readonly connectFailures = new Map<string, number>();
  heartbeats = 0;
  reconnects = 0;
  chunkConflicts = 0;

  startClock(): void {
    this.startedAt = performance.now();
  }

  now(): number {
    return performance.now() - this.startedAt;
  }

  receivedBy(userId: string, eventId: string): void {
    const ids = this.received.get(userId) ?? new Set<string>();
    this.received.set(userId, ids);
    if (ids.has(eventId)) this.duplicates++;
    else ids.add(eventId);
  }

  tellsLost(userId: string, stream: StreamKind): void {
    const key = `${stream}:${userId}`;
    const times = this.toldLost.get(key) ?? [];
    times.push(this.now());
    this.toldLost.set(key, times);
  }

  /** Whether the user was told `recovered: false` for `stream` at or after `since`. */
  wasToldLost(userId: string, stream: StreamKind, since: number): boolean {
    return (this.toldLost.get(`${stream}:${userId}`) ?? []).some((at) => at >= since);
  }

  /** Takes a node's log line, keeping the reason of a SERVICE_UNAVAILABLE answer. */
  nodeLogged(line: string): void {
    if (!line.includes('answering SERVICE_UNAVAILABLE')) return;
    const { reason } = JSON.parse(line) as { reason?: unknown };
    this.unavailableReasons.push({ at: this.now(), reason: String(reason) });
  }

  /** Records an error frame (its code) or an HTTP error (its status) of operation `what`. */
  failed(what: string, answer: { code: string } | { status: number }): void {
    const status = 'status' in answer ? answer.status : httpStatusFor(answer.code as ErrorCode);
    const code = 'code' in answer ? answer.code : String(answer.status);
    if (status >= 500) this.serverErrors.push({ at: this.now(), status, code, what });
    else {
      const key = `${what} ${code}`;
      this.refusals.set(key, (this.refusals.get(key) ?? 0) + 1);
    }
  }
}
