import { z } from 'zod';
import { domainEventTypes } from '../../../protocol/domain-events.js';
import { RPC_NAME } from '../../../protocol/extensions.js';
import { operations } from '../../../protocol/operations.js';
import type { CallSite } from './calls.js';
import type { ExtensionCtx } from './extension-ctx.js';
import { refuse } from './refusal.js';
import { StorageConflictError } from './storage.js';

export type RpcAuth = 'user' | 'public' | 'server';

export interface Rpc {
  extension: string;
  name: string;
  auth: RpcAuth;
  input: z.ZodType | undefined;
  handler: (ctx: ExtensionCtx, input: unknown) => unknown;
  /** Its calls' site, made once: ExtensionCalls keeps a site's meters by the object. */
  site: CallSite;
}

export interface Hook<F> {
  extension: string;
  fn: F;
  /** Its calls' site, made once, as Rpc's. */
  site: CallSite;
}
export type BeforeFn = (ctx: ExtensionCtx, input: unknown) => unknown;
export type AfterFn = (ctx: ExtensionCtx, input: unknown, result: unknown) => unknown;
export type EventFn = (ctx: ExtensionCtx, event: unknown) => unknown;

/** What the loaded extensions registered, in EXTENSIONS order, then registration order. */
export class Registry {
  readonly extensions: { name: string; path: string }[] = [];
  readonly rpcs = new Map<string, Rpc>();
  readonly before = new Map<string, Hook<BeforeFn>[]>();
  readonly after = new Map<string, Hook<AfterFn>[]>();
  readonly events: (Hook<EventFn> & { type: string })[] = [];
}

/**
 * The operations a hook may name: every operation of the catalogue but the connection frames
 * (`auth`, `ping`) and `rpc`, whose calls are the extensions' own.
 */
export const hookableOperations: ReadonlySet<string> = new Set(
  Object.keys(operations).filter((name) => name !== 'auth' && name !== 'ping' && name !== 'rpc'),
);

const RPC_AUTH: readonly RpcAuth[] = ['user', 'public', 'server'];
const EVENT_TYPES: ReadonlySet<string> = new Set(domainEventTypes);

/** A registration the loader refuses: the start stops with this message and the module's path. */
export class RegistrationError extends Error {
  override name = 'RegistrationError';
}

/**
 * The `api` object one extension's `setup` gets. Each method checks what it is given, so a bad
 * name, an unknown operation or event type, or a bad option stops the start, naming it; after
 * `close()` (once `setup` settled) registering throws.
 */
export function extensionApi(extension: string, registry: Registry) {
  let open = true;
  const whileOpen = (method: string) => {
    if (!open) throw new RegistrationError(`api.${method} may only be called while setup runs.`);
  };
  const isFunction = (value: unknown, what: string) => {
    if (typeof value !== 'function') throw new RegistrationError(`${what} must be a function.`);
  };
  const hookOn = <F>(method: 'before' | 'after', operation: unknown, fn: F) => {
    whileOpen(method);
    if (typeof operation !== 'string' || !hookableOperations.has(operation)) {
      throw new RegistrationError(
        `api.${method}: the catalogue has no operation ${String(operation)} to hook.`,
      );
    }
    isFunction(fn, `api.${method}(${operation}, fn): fn`);
    const hooks = registry[method] as Map<string, Hook<F>[]>;
    const site: CallSite = { extension, kind: method, name: operation };
    hooks.set(operation, [...(hooks.get(operation) ?? []), { extension, fn, site }]);
  };
  const api = {
    z,
    StorageConflictError,
    refuse,
    rpc(name: unknown, options: unknown, handler: unknown) {
      whileOpen('rpc');
      if (typeof name !== 'string' || !RPC_NAME.test(name)) {
        throw new RegistrationError(
          `api.rpc: the rpc name ${JSON.stringify(name)} must match ${RPC_NAME.source}.`,
        );
      }
      const earlier = registry.rpcs.get(name);
      if (earlier) {
        throw new RegistrationError(
          `api.rpc: the rpc ${name} is already registered by ${earlier.extension}.`,
        );
      }
      const { auth, input } = rpcOptions(name, options);
      isFunction(handler, `api.rpc(${name}): the handler`);
      const site: CallSite = { extension, kind: 'rpc', name };
      registry.rpcs.set(name, { extension, name, auth, input, handler: handler as Rpc['handler'], site });
    },
    before: (operation: unknown, fn: BeforeFn) => hookOn('before', operation, fn),
    after: (operation: unknown, fn: AfterFn) => hookOn('after', operation, fn),
    on(type: unknown, fn: unknown) {
      whileOpen('on');
      if (typeof type !== 'string' || !EVENT_TYPES.has(type)) {
        throw new RegistrationError(`api.on: there is no domain event type ${String(type)}.`);
      }
      isFunction(fn, `api.on(${type}, fn): fn`);
      registry.events.push({
        extension,
        type,
        fn: fn as EventFn,
        site: { extension, kind: 'event', name: type },
      });
    },
  };
  return { api, close: () => (open = false) };
}

function rpcOptions(name: string, options: unknown): { auth: RpcAuth; input: z.ZodType | undefined } {
  if (options === undefined) return { auth: 'user', input: undefined };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RegistrationError(`api.rpc(${name}): options must be an object {input?, auth?}.`);
  }
  const { auth = 'user', input, ...unknown } = options as { auth?: unknown; input?: unknown };
  const extra = Object.keys(unknown);
  if (extra.length > 0) throw new RegistrationError(`api.rpc(${name}): unknown option ${extra.join(', ')}.`);
  if (!RPC_AUTH.includes(auth as RpcAuth)) {
    throw new RegistrationError(`api.rpc(${name}): auth must be one of ${RPC_AUTH.join(', ')}.`);
  }
  if (input !== undefined && !(input instanceof z.ZodType)) {
    throw new RegistrationError(`api.rpc(${name}): input must be a schema built with api.z.`);
  }
  return { auth: auth as RpcAuth, input: input as z.ZodType | undefined };
}

/** The `api` type as `setup` sees it (defineExtension types it more closely from the catalogue). */
export type ExtensionApi = ReturnType<typeof extensionApi>['api'];
