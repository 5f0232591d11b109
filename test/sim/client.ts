import { setTimeout as sleep } from 'node:timers/promises';
import type { HttpRequest } from './ops.js';
import type { Answer, Timing } from './verdict.js';

/**
 * The driver's HTTP client. A request is sent until it gets an answer: an attempt that fails on
 * the network (the service was killed, or not started yet), times out, answers 503 (the database
 * is cut) or 409 IDEMPOTENCY_KEY_IN_USE (the first attempt is still running) is sent again, the
 * same request with the same Idempotency-Key, after a short pause, until a deadline.
 */

export interface Counters {
  requests: number;
  attempts: number;
  /** Attempts that got no answer at all (connection refused or reset, timeout). */
  unanswered: number;
  /** 503 answers while no fault was under way (a loaded machine's statement timeouts). */
  unavailableOutsideFaults: number;
  /** The first of them: what was asked, and how long after the last fault. */
  unavailableOutside: string[];
  unavailableDuringFaults: number;
  replays: number;
  /** Requests some attempt of which went unanswered (or 503), sent again until answered... */
  retried: number;
  /** ...of which the first attempt had done the write: the retry got its answer replayed. */
  retriedReplayed: number;
}

export class NoAnswerError extends Error {}

/** A 503 while no fault was under way, when the run was asked to fail on one (`--fail-on-503`). */
export class UnavailableError extends Error {}

const ATTEMPT_TIMEOUT_MS = 15_000;
const PAUSE_MS = 50;

export class Client {
  readonly counters: Counters = {
    requests: 0,
    attempts: 0,
    unanswered: 0,
    unavailableOutsideFaults: 0,
    unavailableOutside: [],
    unavailableDuringFaults: 0,
    replays: 0,
    retried: 0,
    retriedReplayed: 0,
  };
  /** Set while a fault is being injected, so 503s are counted where they belong. */
  faultUnderWay = false;
  /** The step under way, for the list of 503s outside faults. */
  step = 0;
  /** When the last fault ended (its batch answered) and what it was, to say how long after it a 503 came. */
  faultEndedAt: number | undefined;
  lastFault = '';

  /** Set when the run failed while requests were still being sent: they stop retrying. */
  private abandoned = false;
  /** Attempts that got an answer, of any kind: a fault can be timed by them. */
  private answeredAttempts = 0;
  private waiters: { at: number; resolve: () => void }[] = [];

  constructor(
    private readonly baseUrl: string,
    private readonly deadlineMs: number,
    /** A 503 outside a fault fails the run instead of being sent again. */
    private readonly failOn503 = false,
  ) {}

  /** Sends `request` as `token` until answered; the answer and when it was sent and answered. */
  async send(request: HttpRequest, token: string): Promise<{ answer: Answer; timing: Timing }> {
    this.counters.requests++;
    const sentAt = Date.now();
    const deadline = sentAt + this.deadlineMs;
    let uncertain = false;
    let lastProblem = '';
    for (;;) {
      this.counters.attempts++;
      const outcome = await this.attempt(request, token);
      if (outcome.kind === 'answer') {
        this.answeredAttempts++;
        for (const waiter of this.waiters) if (waiter.at <= this.answeredAttempts) waiter.resolve();
        this.waiters = this.waiters.filter((waiter) => waiter.at > this.answeredAttempts);
        const { answer } = outcome;
        const code = (answer.body as { code?: string } | null)?.code;
        const again = answer.status === 503 || (answer.status === 409 && code === 'IDEMPOTENCY_KEY_IN_USE');
        if (!again) {
          if (answer.replayed) this.counters.replays++;
          if (uncertain) {
            this.counters.retried++;
            if (answer.replayed) this.counters.retriedReplayed++;
          }
          return { answer, timing: { sentAt, answeredAt: Date.now(), uncertain } };
        }
        if (answer.status === 503) {
          if (this.faultUnderWay) this.counters.unavailableDuringFaults++;
          else {
            this.counters.unavailableOutsideFaults++;
            const since =
              this.faultEndedAt === undefined
                ? 'no fault before'
                : `${Date.now() - this.faultEndedAt} ms after the last fault (${this.lastFault})`;
            const what = `${request.method} ${request.path} at step ${this.step}, ${since}`;
            if (this.failOn503) throw new UnavailableError(`${what}: ${JSON.stringify(answer.body)}`);
            if (this.counters.unavailableOutside.length < 20) this.counters.unavailableOutside.push(what);
          }
        }
        lastProblem = `${answer.status} ${code}`;
      } else {
        this.counters.unanswered++;
        lastProblem = outcome.reason;
      }
      // Whatever happened to this attempt, the write may have been done: its answer is unknown.
      uncertain = true;
      if (this.abandoned)
        throw new NoAnswerError(`${request.method} ${request.path}: abandoned, the run failed`);
      if (Date.now() > deadline) {
        throw new NoAnswerError(
          `${request.method} ${request.path} got no answer within ${this.deadlineMs} ms (last: ${lastProblem})`,
        );
      }
      await sleep(PAUSE_MS);
    }
  }

  /** Stops every request still retrying (the run failed, e.g. the service would not start again). */
  abandon(): void {
    this.abandoned = true;
  }

  /** Resolves once `count` more attempts than now got an answer. */
  answersFromNow(count: number): Promise<void> {
    if (count <= 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ at: this.answeredAttempts + count, resolve }));
  }

  private async attempt(
    request: HttpRequest,
    token: string,
  ): Promise<{ kind: 'answer'; answer: Answer } | { kind: 'lost'; reason: string }> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (request.key !== undefined) headers['idempotency-key'] = request.key;
    try {
      const response = await fetch(`${this.baseUrl}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      const text = await response.text();
      return {
        kind: 'answer',
        answer: {
          status: response.status,
          replayed: response.headers.get('idempotent-replayed') === 'true',
          body: parseBody(text),
        },
      };
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause;
      return { kind: 'lost', reason: cause?.code ?? (error as Error).name ?? String(error) };
    }
  }
}

/** The body as JSON, or as the text it is when it is not JSON (which the model never expects). */
function parseBody(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
