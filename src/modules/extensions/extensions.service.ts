import type { z } from 'zod';
import type { Operation } from '../../../protocol/operation.js';
import type { Ctx } from '../../platform/context.js';
import { AppError, ErrorCode, type FieldError } from '../../platform/errors.js';
import type { LogSink } from '../../platform/log.js';
import type { OperationHook } from '../../platform/operation-hooks.js';
import type { DomainEvent } from '../../platform/outbox.js';
import type { CallerDirectory } from './callers.js';
import type { ExtensionCalls } from './calls.js';
import { type CtxServices, type ExtensionCaller, extensionCtx } from './extension-ctx.js';
import type { AfterFn, BeforeFn, EventFn, Hook, Registry, Rpc } from './registry.js';

/** Where an rpc call came in: the users' path (REST /api or the socket) or the game servers'. */
export type RpcPath = 'api' | 'socket' | 'internal';

/** An rpc's answer as JSON text, checked serializable: REST sends it as it is, the socket decodes it. */
export interface RpcAnswer {
  json: string;
}

/**
 * Runs the loaded extensions' functions for the service: the hooks around operations, the rpcs
 * and the domain-event handlers, each call isolated by ExtensionCalls with a fresh ctx.
 */
export class ExtensionsService {
  constructor(
    private readonly deps: {
      registry: Registry;
      calls: ExtensionCalls;
      services: CtxServices;
      callers: CallerDirectory;
    },
  ) {}

  /** The hook the platform runs around `op`, or undefined when no extension hooks it. */
  hookOf(op: Operation): OperationHook | undefined {
    const before = this.deps.registry.before.get(op.name);
    const after = this.deps.registry.after.get(op.name);
    if (!before && !after) return undefined;
    return {
      ...(before ? { before: (ctx, input) => this.runBefore(op, before, ctx, input) } : {}),
      ...(after ? { after: (ctx, input, answer) => this.runAfter(after, ctx, input, answer) } : {}),
    };
  }

  /**
   * Calls the rpc `name` for a caller on `path`: 404 for a name not served there (before any
   * other check), the rpc's own auth, its input schema, then its handler within its deadline. An
   * rpc answering synchronously for a caller already known is answered synchronously (no promise),
   * as the socket's dispatch then acks it.
   */
  call(ctx: Ctx, path: RpcPath, name: string, input: unknown): RpcAnswer | Promise<RpcAnswer> {
    const rpc = this.deps.registry.rpcs.get(name);
    if (!rpc || (rpc.auth === 'server') !== (path === 'internal')) {
      throw new AppError(ErrorCode.NOT_FOUND, `No rpc named ${name} is served on this path.`);
    }
    if (rpc.auth === 'user' && !ctx.user) {
      throw new AppError(ErrorCode.UNAUTHENTICATED, 'This rpc needs a signed-in user.');
    }
    if (rpc.auth === 'server' && !ctx.service) {
      throw new AppError(ErrorCode.UNAUTHENTICATED, "This rpc needs a game server's token.");
    }
    const parsed = rpc.input ? parseInput(rpc.input, input, path === 'socket' ? 'd.input' : 'body') : input;
    const known = this.deps.callers.of(ctx);
    return known instanceof Promise
      ? known.then((caller) => this.invoke(rpc, ctx, parsed, caller))
      : this.invoke(rpc, ctx, parsed, known);
  }

  private invoke(rpc: Rpc, ctx: Ctx, input: unknown, caller: ExtensionCaller | null) {
    const server =
      rpc.auth === 'server' && ctx.service
        ? { server_id: ctx.service.id, world_id: ctx.service.scope }
        : null;
    const { site } = rpc;
    return this.deps.calls.run(site, ctx.log, (deadline) => {
      const result = rpc.handler(
        extensionCtx(this.deps.services, site, deadline, { caller, server, log: ctx.log }),
        input,
      );
      // An rpc that answers synchronously is answered without a timer (ExtensionCalls.run).
      return result instanceof Promise ? result.then(answerOf) : answerOf(result);
    });
  }

  /** Handles one domain event with one extension's handler: resolves when it succeeded. */
  async handleEvent(
    handler: Hook<EventFn> & { type: string },
    event: DomainEvent,
    log: LogSink,
  ): Promise<void> {
    const { site } = handler;
    await this.deps.calls.run(site, log, (deadline) =>
      handler.fn(
        extensionCtx(this.deps.services, site, deadline, { caller: null, server: null, log }),
        event,
      ),
    );
  }

  private async runBefore(op: Operation, hooks: readonly Hook<BeforeFn>[], ctx: Ctx, input: unknown) {
    const known = this.deps.callers.of(ctx);
    const caller = known instanceof Promise ? await known : known;
    let current = input;
    for (const { fn, site } of hooks) {
      const given = current;
      const admitted = (replacement: unknown) =>
        replacement === undefined ? given : replacementOf(op, replacement);
      current = await this.deps.calls.run(site, ctx.log, (deadline) => {
        const hookCtx = extensionCtx(this.deps.services, site, deadline, {
          caller,
          server: null,
          log: ctx.log,
        });
        // A copy: a hook that edits the input in place instead of returning it changes nothing.
        const replacement = fn(hookCtx, structuredClone(given));
        return replacement instanceof Promise ? replacement.then(admitted) : admitted(replacement);
      });
    }
    return current;
  }

  private runAfter(hooks: readonly Hook<AfterFn>[], ctx: Ctx, input: unknown, answer: unknown): void {
    // Copied now, before the transport sends the answer: what a hook does to them cannot reach it.
    const seen = structuredClone({ input, answer });
    void (async () => {
      const caller = await Promise.resolve(this.deps.callers.of(ctx)).catch(() => null);
      for (const { fn, site } of hooks) {
        try {
          await this.deps.calls.run(site, ctx.log, (deadline) =>
            fn(
              extensionCtx(this.deps.services, site, deadline, { caller, server: null, log: ctx.log }),
              seen.input,
              seen.answer,
            ),
          );
        } catch {
          // Counted and logged by run; the next after hook runs all the same.
        }
      }
    })();
  }
}

/** The input as the rpc's schema parses it, or 422 naming each field under the transport's prefix. */
function parseInput(schema: z.ZodType, input: unknown, prefix: string): unknown {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const errors: FieldError[] = parsed.error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].join('.'),
    message: issue.message,
  }));
  throw new AppError(ErrorCode.VALIDATION_FAILED, "The rpc's input is invalid.", { errors });
}

/** A hook's replacement input, checked against the operation's own request schema. */
function replacementOf(op: Operation, replacement: unknown): unknown {
  const parsed = op.request?.safeParse(replacement);
  if (!parsed?.success) {
    throw new Error(
      `The before hook of ${op.name} returned a replacement its request schema refuses: ${parsed?.error.message ?? 'the operation takes no input'}`,
    );
  }
  return parsed.data;
}

/** An rpc's result as JSON; a value JSON cannot carry (a BigInt, a cycle, a function) is the extension's fault. */
function answerOf(result: unknown): RpcAnswer {
  const json = JSON.stringify(result === undefined ? null : result);
  if (json === undefined) throw new TypeError('The rpc returned a value JSON cannot carry.');
  return { json };
}
