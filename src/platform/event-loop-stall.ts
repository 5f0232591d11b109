import type { Logger } from './log.js';

/**
 * A call that may block the event loop, as the code running it describes it: when it began
 * (`Date.now()`), and whatever names it (an extension's call: `{extension, kind, name}`), which a
 * stall's log line carries as given.
 */
export interface RunningCall {
  readonly startedAt: number;
}

/** The calls running right now, asked for only when a stall is logged. */
export type RunningCalls = () => readonly RunningCall[];

/** What code running foreign calls (extensions) tells the detector; Platform.stalls. */
export interface StallTracking {
  /** Adds a source of the calls in flight, named by every stall logged from now on. */
  track(running: RunningCalls): void;
  /**
   * Tells that `call` ended. A synchronous loop is noticed only once it returned, by when its call
   * has left the calls in flight; one that ends while the loop is overdue ran during the stall, and
   * the stall's log names it too. Costs a clock read per call.
   */
  ended(call: RunningCall): void;
}

/**
 * How often the loop is looked at. A stall of B ms shows as a timer late by B - 100 to B ms, so a
 * logged stall is certain to have been longer than the threshold; ten wake-ups a second cost nothing.
 */
export const STALL_CHECK_INTERVAL_MS = 100;

/** A stall this long has health probes and socket heartbeats failing: logged at error, not warn. */
const ERROR_AFTER_MS = 10_000;

/**
 * Notices a blocked event loop (a synchronous busy loop cannot be interrupted in-process): an
 * unref'd timer measures how late it fires, and a lateness over `thresholdMs` is logged with how
 * long the loop was blocked and the calls that were running, and counted in
 * `atrium_event_loop_stalls_total`. A loop blocked forever is never noticed here; in worker mode the
 * primary replaces that worker (src/platform/cluster/supervisor.ts).
 */
export class EventLoopStalls implements StallTracking {
  private readonly sources: RunningCalls[];
  private readonly thresholdMs: number;
  private endedLate: RunningCall[] = [];
  private lastCheck = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: {
      log: Pick<Logger, 'warn' | 'error'>;
      counter: { inc(): void };
      thresholdMs?: number;
      running?: RunningCalls;
    },
  ) {
    this.thresholdMs = options.thresholdMs ?? 1000;
    this.sources = [options.running ?? (() => [])];
  }

  start(): void {
    if (this.timer) return;
    this.lastCheck = performance.now();
    this.timer = setInterval(() => this.check(), STALL_CHECK_INTERVAL_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.endedLate = [];
  }

  track(running: RunningCalls): void {
    this.sources.push(running);
  }

  ended(call: RunningCall): void {
    if (this.timer && this.lateBy(performance.now()) > this.thresholdMs) this.endedLate.push(call);
  }

  private lateBy(now: number): number {
    return now - this.lastCheck - STALL_CHECK_INTERVAL_MS;
  }

  private check(): void {
    const now = performance.now();
    const blockedMs = this.lateBy(now);
    this.lastCheck = now;
    const ended = this.endedLate;
    if (ended.length > 0) this.endedLate = [];
    if (blockedMs > this.thresholdMs) this.report(Math.round(blockedMs), ended);
  }

  private report(blockedMs: number, ended: readonly RunningCall[]): void {
    const { log, counter } = this.options;
    counter.inc();
    const at = Date.now();
    const running = this.sources.flatMap((source) => {
      try {
        return source().map((call) => ({ ...call, forMs: at - call.startedAt }));
      } catch (err) {
        // Foreign code, run from a timer: its failure must not take the process down.
        log.error({ err }, 'event loop stall: a source of running calls failed');
        return [];
      }
    });
    const level = blockedMs >= ERROR_AFTER_MS ? 'error' : 'warn';
    if (running.length === 0 && ended.length === 0)
      log[level]({ blockedMs }, 'event loop stalled; no tracked call was running');
    else log[level]({ blockedMs, running, ended }, 'event loop stalled');
  }
}
