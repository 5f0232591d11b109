import type { z } from 'zod';
import type { DomainEventData } from '../../../protocol/domain-events.js';
import type { InputOf, OutputOf } from '../../../protocol/operation.js';
import type { OperationName, Operations } from '../../../protocol/operations.js';
import type { DomainEvent } from '../../platform/outbox.js';
import type { ExtensionCtx } from './extension-ctx.js';
import type { ExtensionRefusal } from './refusal.js';
import type { StorageConflictError } from './storage.js';

/** The operations a hook may name (every operation of the catalogue but `auth`, `ping` and `rpc`). */
export type HookableOperation = Exclude<OperationName, 'auth' | 'ping' | 'rpc'>;

type Awaitable<T> = T | Promise<T>;

/**
 * The `api` an extension's `setup` gets, typed from the catalogue: a hook's input and result and
 * an event's data are those of the operation or event named, and a name the catalogue does not
 * have is a compile error.
 */
export interface TypedExtensionApi {
  z: typeof z;
  StorageConflictError: typeof StorageConflictError;
  refuse(status: number, code: string, detail: string): ExtensionRefusal;
  rpc<S extends z.ZodType | undefined = undefined>(
    name: string,
    options: { input?: S; auth?: 'user' | 'public' | 'server' },
    handler: (ctx: ExtensionCtx, input: S extends z.ZodType ? z.output<S> : unknown) => unknown,
  ): void;
  before<N extends HookableOperation>(
    operation: N,
    fn: (
      ctx: ExtensionCtx,
      input: InputOf<Operations[N]>,
    ) => Awaitable<InputOf<Operations[N]> | undefined | void>,
  ): void;
  after<N extends HookableOperation>(
    operation: N,
    fn: (ctx: ExtensionCtx, input: InputOf<Operations[N]>, result: OutputOf<Operations[N]>) => unknown,
  ): void;
  on<T extends keyof DomainEventData>(
    type: T,
    fn: (ctx: ExtensionCtx, event: DomainEvent<DomainEventData[T]>) => unknown,
  ): void;
}

export interface ExtensionDefinition {
  /** `[a-z][a-z0-9_-]{0,63}`, unique among the loaded extensions. */
  name: string;
  setup(api: TypedExtensionApi): void | Promise<void>;
}

/**
 * Types an extension from the catalogue; at run time it returns its argument. Never required: a
 * plain `{name, setup(api)}` default export loads the same.
 */
export function defineExtension<const D extends ExtensionDefinition>(definition: D): D {
  return definition;
}

export type { ExtensionCtx };
