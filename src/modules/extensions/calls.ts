import type { Registry } from 'prom-client';
import { AppError, asAppError, ErrorCode } from '../../platform/errors.js';
import { HotCounter } from '../../platform/hot-counter.js';
import { HotHistogram } from '../../platform/hot-histogram.js';
import type { LogSink } from '../../platform/log.js';
import { ExtensionRefusal } from './refusal.js';

/** What an extension's function is called for: the `kind` and `name` of the contract's metrics. */
export interface CallSite {
  readonly extension: string;
  readonly kind: 'rpc' | 'before' | 'after' | 'event';
  /** The rpc name, operation name or event type. */
  readonly name: string;
}

/** One call in flight, for the event-loop stall log. */
export interface RunningCall extends CallSite {
  readonly startedAt: number;
}

/** The deadline of one call, as its `ctx` sees it. */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Whether the deadline passed: every `ctx` service then refuses to act. */
  expired(): boolean;
}

type Outcome = 'ok' | 'refused' | 'error' | 'timeout';

type Meters = Record<Outcome, { inc(): void }> & { duration: { observe(seconds: number): void } };

/** A call's deadline; its AbortSignal is made only for a call that asks for it. */
class CallDeadline implements Deadline {
  private controller: AbortController | undefined;
  private reason: unknown;
  private passed = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.passed) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  expired(): boolean {
    return this.passed;
  }

  expire(reason: unknown): void {
    this.passed = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

/**
 * Runs extensions' functions in isolation from the service: each call under its deadline, its
 * failure turned into the one error a client may see (EXTENSION_ERROR, EXTENSION_TIMEOUT, a
 * refusal as given, or a lost dependency's 503), logged with its site, and counted.
 */
export class ExtensionCalls {
  // Counted and timed on every call: see HotCounter and HotHistogram for why not prom-client's own.
  private readonly calls: HotCounter<'extension' | 'kind' | 'name' | 'outcome'>;
  private readonly duration: HotHistogram<'extension' | 'kind' | 'name'>;
  private readonly inFlight = new Set<RunningCall>();
  /** By site object: the registry makes each rpc's and hook's site once. */
  private readonly meters = new WeakMap<CallSite, Meters>();

  constructor(
    registry: Registry,
    private readonly timeoutMs: number,
    /** Told of each call that ended, so a stall its synchronous code caused can name it. */
    private readonly ended: (call: RunningCall) => void = () => {},
  ) {
    this.calls = new HotCounter({
      name: 'atrium_extension_calls_total',
      help: "Calls of extensions' functions by extension, kind (rpc, before, after, event), name and outcome (ok, refused, error, timeout).",
      labelNames: ['extension', 'kind', 'name', 'outcome'],
      registers: [registry],
    });
    this.duration = new HotHistogram({
      name: 'atrium_extension_duration_seconds',
      help: "Duration of calls of extensions' functions by extension, kind and name.",
      labelNames: ['extension', 'kind', 'name'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
  }

  /** The calls running now, oldest first. */
  running(): readonly RunningCall[] {
    return [...this.inFlight];
  }

  /** Counts by outcome of one site, for the console. */
  async countsOf(site: CallSite): Promise<Record<Outcome, number>> {
    const counts: Record<Outcome, number> = { ok: 0, refused: 0, error: 0, timeout: 0 };
    for (const value of this.calls.get().values) {
      const { extension, kind, name, outcome } = value.labels;
      if (extension === site.extension && kind === site.kind && name === site.name) {
        counts[outcome as Outcome] += value.value;
      }
    }
    return counts;
  }

  /**
   * Runs `fn` for `site` within the deadline. Resolves with its value; rejects with the refusal it
   * threw, or with the AppError the caller's client gets for its failure or its timeout (the
   * value it settles with later is ignored). A function that answers synchronously is answered so,
   * with no timer and no promise: it returns its value or throws its refusal or error.
   */
  run<T>(site: CallSite, log: LogSink, fn: (deadline: Deadline) => T | Promise<T>): T | Promise<T> {
    const meters = this.metersOf(site);
    const call: RunningCall = { ...site, startedAt: Date.now() };
    const deadline = new CallDeadline();
    this.inFlight.add(call);
    const settle = (outcome: Outcome) => {
      this.inFlight.delete(call);
      this.ended(call);
      meters[outcome].inc();
      meters.duration.observe((Date.now() - call.startedAt) / 1000);
    };
    const failure = (error: unknown): unknown => {
      if (error instanceof ExtensionRefusal) {
        settle('refused');
        return error;
      }
      settle('error');
      return this.failureOf(site, log, error);
    };
    let value: T | Promise<T>;
    try {
      value = fn(deadline);
    } catch (error) {
      throw failure(error);
    }
    if (!(value instanceof Promise)) {
      settle('ok');
      return value;
    }
    const pending = value;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          deadline.expire(new AppError(ErrorCode.EXTENSION_TIMEOUT, 'The deadline of this call passed.'));
          settle('timeout');
          log.warn({ ...site, timeout_ms: this.timeoutMs }, 'an extension call passed its deadline');
          reject(timedOut(site));
        },
        Math.max(0, this.timeoutMs - (Date.now() - call.startedAt)),
      );
      pending.then(
        (result) => {
          if (deadline.expired()) return;
          clearTimeout(timer);
          settle('ok');
          resolve(result);
        },
        (error: unknown) => {
          if (deadline.expired()) return;
          clearTimeout(timer);
          reject(failure(error));
        },
      );
    });
  }

  /** The counters and the histogram of one site, looked up once per site object. */
  private metersOf(site: CallSite): Meters {
    let meters = this.meters.get(site);
    if (!meters) {
      const labels = { extension: site.extension, kind: site.kind, name: site.name };
      meters = {
        ok: this.calls.child({ ...labels, outcome: 'ok' }),
        refused: this.calls.child({ ...labels, outcome: 'refused' }),
        error: this.calls.child({ ...labels, outcome: 'error' }),
        timeout: this.calls.child({ ...labels, outcome: 'timeout' }),
        duration: this.duration.child(labels),
      };
      this.meters.set(site, meters);
    }
    return meters;
  }

  /**
   * The error a client gets for a call that failed: a lost database or Redis keeps its 503; any
   * other failure is logged whole here and answered EXTENSION_ERROR, naming none of it.
   */
  private failureOf(site: CallSite, log: LogSink, error: unknown): AppError {
    const asDependency = asAppError(error, log);
    if (asDependency.code === ErrorCode.SERVICE_UNAVAILABLE) return asDependency;
    log.error(
      { ...site, err: error, message: (error as Error | undefined)?.message },
      'an extension call failed',
    );
    return new AppError(ErrorCode.EXTENSION_ERROR, `The extension ${site.extension} failed.`);
  }
}

function timedOut(site: CallSite): AppError {
  return new AppError(
    ErrorCode.EXTENSION_TIMEOUT,
    `The extension ${site.extension} did not answer in time; nothing was done.`,
  );
}
