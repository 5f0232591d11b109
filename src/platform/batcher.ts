import { type DataAccess, inTransaction } from './data-access.js';
import { dependencyFailureReason } from './errors.js';

/**
 * Runs calls in batches, as a database commits a group: a call starts a batch of its own at once
 * while fewer than `maxInFlight` batches are running; otherwise it waits, and the next batch to
 * start (when one ends) takes every call that waited, up to `maxSize`. A quiet node therefore runs
 * each call alone and without delay, and a busy one serves many callers with one statement,
 * holding a pooled connection once for all of them instead of once each.
 *
 * `run` answers one result per input, in order. When it fails for a batch of several, each input
 * is run again alone, so one caller's failure (a row another request deleted, say) stays that
 * caller's and the others still get their results; a failure of the database or Redis itself
 * goes to every caller at once. `run` must therefore leave nothing written when it fails, as a
 * single statement outside a transaction does. `observe` is told the size of each batch (a metric).
 */
export function batched<In, Out>(
  run: (inputs: readonly In[]) => Promise<readonly Out[]>,
  options: BatchOptions,
): (input: In) => Promise<Out> {
  const { maxSize, maxInFlight, observe } = options;
  const waiting: PendingCall<In, Out>[] = [];
  let inFlight = 0;
  const start = () => {
    while (inFlight < maxInFlight && waiting.length > 0) {
      const calls = waiting.splice(0, maxSize);
      inFlight++;
      observe?.(calls.length);
      void settle(run, calls).finally(() => {
        inFlight--;
        start();
      });
    }
  };
  return (input) =>
    new Promise<Out>((resolve, reject) => {
      waiting.push({ input, resolve, reject });
      start();
    });
}

/**
 * What a batched statement needs of a request's context (a `Ctx`): its data handle. Named here
 * rather than imported, as the auth module batches its reads too and the context imports auth.
 */
export interface CallerData {
  data: DataAccess;
}

export interface BatchOptions {
  maxSize: number;
  maxInFlight: number;
  observe?: (size: number) => void;
}

/**
 * `batched` for a repository function of many inputs, called with a request's context: a batch
 * runs on its first caller's handle. A caller in a transaction runs alone, in it: a batch
 * must not join one caller's transaction, and nothing that caller writes may leave it.
 */
export function batchedStatement<In, Out>(
  runMany: (data: DataAccess, inputs: readonly In[]) => Promise<readonly Out[]>,
  options: BatchOptions,
): (ctx: CallerData, input: In) => Promise<Out> {
  type Call = { ctx: CallerData; input: In };
  // Only callers outside a transaction join, so no batch starts inside one either.
  const batch = batched(
    (calls: readonly Call[]) =>
      runMany(
        (calls[0] as Call).ctx.data,
        calls.map((call) => call.input),
      ),
    options,
  );
  return async (ctx, input) => {
    if (!inTransaction(ctx.data)) return batch({ ctx, input });
    const [output] = await runMany(ctx.data, [input]);
    return output as Out;
  };
}

/** Statements of one kind a node runs at once (statementsAtOnce). */
export const STATEMENTS_AT_ONCE = 2;

/**
 * The maxInFlight of a batched statement on a pool of `poolSize` connections: two, so one
 * statement runs while the callers of the next gather and the last one's answers are handed out,
 * and at most half the pool, so a burst of one kind of call never takes the connections every
 * other statement needs. More at once only splits the waiting callers into smaller batches, each
 * paying a statement's fixed cost again (its round trip, plan, commit and WAL flush): on Postgres
 * with a pool of 10, five at once served fewer DM sends and `/me` reads than two
 * (docs/performance.md). Nor do two hold a node back: two statements of up to `maxSize` calls
 * each serve more callers than one event loop can bring them.
 */
export function statementsAtOnce(poolSize: number): number {
  return Math.max(1, Math.min(STATEMENTS_AT_ONCE, Math.floor(poolSize / 2)));
}

interface PendingCall<In, Out> {
  input: In;
  resolve(output: Out): void;
  reject(error: unknown): void;
}

/** Runs one batch and gives each call its result; never rejects. */
async function settle<In, Out>(
  run: (inputs: readonly In[]) => Promise<readonly Out[]>,
  calls: readonly PendingCall<In, Out>[],
): Promise<void> {
  let outputs: readonly Out[];
  try {
    outputs = await run(calls.map((call) => call.input));
    if (outputs.length !== calls.length) {
      throw new Error(`a batch of ${calls.length} answered ${outputs.length} results`);
    }
  } catch (error) {
    // A dependency that is down fails every call alike: they all get the error at once (a fast
    // 503) rather than a run each, which would only wait for the same timeouts again.
    if (calls.length === 1 || dependencyFailureReason(error) !== undefined) {
      for (const call of calls) call.reject(error);
    } else await Promise.all(calls.map((call) => settle(run, [call])));
    return;
  }
  for (const [index, call] of calls.entries()) call.resolve(outputs[index] as Out);
}
