import { Counter, Histogram, type Registry } from 'prom-client';
import { AppError, asAppError, ErrorCode } from '../../platform/errors.js';
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

/**
 * Runs extensions' functions in isolation from the service: each call under its deadline, its
 * failure turned into the one error a client may see (EXTENSION_ERROR, EXTENSION_TIMEOUT, a
 * refusal as given, or a lost dependency's 503), logged with its site, and counted.
 */
export class ExtensionCalls {
  private readonly calls: Counter<'extension' | 'kind' | 'name' | 'outcome'>;
  private readonly duration: Histogram<'extension' | 'kind' | 'name'>;
  private readonly inFlight = new Set<RunningCall>();

  constructor(
    registry: Registry,
    private readonly timeoutMs: number,
    /** Told of each call that ended, so a stall its synchronous code caused can name it. */
    private readonly ended: (call: RunningCall) => void = () => {},
  ) {
    this.calls = new Counter({
      name: 'atrium_extension_calls_total',
      help: "Calls of extensions' functions by extension, kind (rpc, before, after, event), name and outcome (ok, refused, error, timeout).",
      labelNames: ['extension', 'kind', 'name', 'outcome'],
      registers: [registry],
    });
    this.duration = new Histogram({
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
    for (const value of (await this.calls.get()).values) {
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
   * value it settles with later is ignored).
   */
  run<T>(site: CallSite, log: LogSink, fn: (deadline: Deadline) => T | Promise<T>): Promise<T> {
    const call: RunningCall = { ...site, startedAt: Date.now() };
    const controller = new AbortController();
    let expired = false;
    const deadline: Deadline = { signal: controller.signal, expired: () => expired };
    this.inFlight.add(call);
    return new Promise<T>((resolve, reject) => {
      const settle = (outcome: Outcome) => {
        this.inFlight.delete(call);
        this.ended(call);
        this.calls.inc({ ...site, outcome });
        this.duration.observe(site, (Date.now() - call.startedAt) / 1000);
      };
      const timer = setTimeout(() => {
        expired = true;
        controller.abort(new AppError(ErrorCode.EXTENSION_TIMEOUT, 'The deadline of this call passed.'));
        settle('timeout');
        log.warn({ ...site, timeout_ms: this.timeoutMs }, 'an extension call passed its deadline');
        reject(timedOut(site));
      }, this.timeoutMs);
      const succeed = (value: T) => {
        if (expired) return;
        clearTimeout(timer);
        settle('ok');
        resolve(value);
      };
      const fail = (error: unknown) => {
        if (expired) return;
        clearTimeout(timer);
        if (error instanceof ExtensionRefusal) {
          settle('refused');
          reject(error);
          return;
        }
        settle('error');
        reject(this.failureOf(site, log, error));
      };
      try {
        const value = fn(deadline);
        if (value instanceof Promise) value.then(succeed, fail);
        else succeed(value);
      } catch (error) {
        fail(error);
      }
    });
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
