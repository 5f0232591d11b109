import type { Operation } from '../../protocol/operation.js';
import type { Ctx } from './context.js';
import { wasReplayed } from './idempotency.js';

/**
 * A service function as the transports call it (see OperationHandler in operations.ts): the
 * context, its operation's input, then what its transport adds (a connection and request id, or a
 * plain REST route's facts that no field carries).
 */
export type ServiceHandler = (ctx: Ctx, input: never, ...transport: never[]) => unknown;

/**
 * What runs around one operation, on both transports, for server extensions (docs/extensions.md).
 * The platform knows only that something may replace the input first and look at the answer after.
 */
export interface OperationHook {
  /** Runs once the caller is authenticated and the input validated; resolves to the input the operation runs with. */
  before?: (ctx: Ctx, input: unknown) => Promise<unknown>;
  /** Told of a committed answer (not of a replay); not awaited, so it never delays or changes the answer. */
  after?: (ctx: Ctx, input: unknown, answer: unknown) => void;
}

/**
 * The hooks of the operations that have any, set while the modules are built and read once when
 * the transports register the operations: an operation without one is registered with its service
 * function itself, so it pays no allocation or await for the feature.
 */
export class OperationHooks {
  private readonly byName = new Map<string, OperationHook>();

  set(operation: string, hook: OperationHook): void {
    this.byName.set(operation, hook);
  }

  get(operation: string): OperationHook | undefined {
    return this.byName.get(operation);
  }

  /** `handler` with the operation's hooks around it, or `handler` itself when it has none. */
  around<H extends ServiceHandler>(op: Operation, handler: H): H {
    const hook = this.byName.get(op.name);
    if (!hook) return handler;
    const { before, after } = hook;
    const run = handler as unknown as (ctx: Ctx, input: unknown, ...transport: unknown[]) => unknown;
    return (async (ctx: Ctx, input: unknown, ...transport: unknown[]) => {
      const admitted = before ? await before(ctx, input) : input;
      const answer = await run(ctx, admitted, ...transport);
      if (after && !wasReplayed(answer)) after(ctx, admitted, answer);
      return answer;
    }) as unknown as H;
  }
}
