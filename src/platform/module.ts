import type { AccessTokens } from './auth/access-tokens.js';
import type { KeyRing } from './auth/keys.js';
import type { ServiceTokens } from './auth/service-tokens.js';
import type { EventBus } from './bus.js';
import type { Caller, Ctx } from './context.js';
import type { ControlChannel, ControlCommand, ControlContext, ControlOutput } from './control-channel.js';
import type { DataAccess } from './data-access.js';
import type { Database } from './db.js';
import type { StallTracking } from './event-loop-stall.js';
import type { Gateway } from './gateway/gateway.js';
import type { SessionListener } from './gateway/sessions.js';
import type { HttpServer } from './http.js';
import type { Kv } from './kv/kv.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { OperationHooks } from './operation-hooks.js';
import type { OperationBinding } from './operations.js';
import type { Outbox } from './outbox.js';
import type { PlatformConfig } from './platform-config.js';

/**
 * The settings a module's setup reads from `platform.config`: the platform's and its own. The
 * platform declares only its part; src/config.ts, which merges every module's part with it,
 * completes this interface by declaration merging, so no platform file imports a module's settings.
 */
export interface ServiceConfig extends PlatformConfig {}

/** The ports a module is built from. A module hands its services only the parts they use. */
export interface Platform {
  config: ServiceConfig;
  /**
   * The parts `config` is declared in (the platform's, then each module's zod shape, by name), for
   * the admins' view of the settings in force, which lists each setting under its part.
   */
  configParts: Readonly<Record<string, object>>;
  log: Logger;
  metrics: Metrics;
  db: Database;
  kv: Kv;
  bus: EventBus;
  gateway: Gateway;
  keys: KeyRing;
  tokens: AccessTokens;
  /** Where the module that issues service tokens plugs in their check. */
  serviceTokens: ServiceTokens;
  /**
   * Domain events recorded in the transaction that commits them, handled after the commit by the
   * consumers modules add at setup (extensions' handlers), on whichever node claims them.
   */
  outbox: Outbox;
  /**
   * The event-loop stall detector: code that runs foreign calls (extensions) tells it what runs,
   * so that a stall's log line names the call that blocked the loop.
   */
  stalls: StallTracking;
  /**
   * Hooks around operations (server extensions), set while the modules are built: the transports
   * register each operation after every module was built, with its hooks if it has any.
   */
  hooks: OperationHooks;
  /** The service context of one request or frame. */
  ctx(caller: Caller): Ctx;
}

/** What a module's `setup` returns: its public API and its adapters. */
export interface ModuleParts<Api> {
  /** What other modules (and tests) may use; they receive it through their own deps. */
  api: Api;
  /** Operations from `protocol/`, each bound to a service function; registered on both transports. */
  operations?: readonly OperationBinding[];
  /**
   * Routes that are not client operations (probes, metrics, key sets). They need a signed-in user
   * unless their options say `config: { public: true }`.
   */
  routes?(http: HttpServer): void;
  /** Told when a user's first connection on this node opens and the last one closes. */
  sessions?: SessionListener;
  /** Runs once the service listens (timers, leases), with the ports it listens on. */
  start?(listening: { httpPort: number; wsPort: number }): Promise<void>;
  /** Runs after HTTP and the gateway closed, in reverse module order. */
  stop?(): Promise<void>;
}

/** What an operator's command runs with: who asked (the CLI) and a handle on the database. */
export interface CommandContext extends ControlContext {
  data: DataAccess;
}

/** An operator's command a module declares, made with `command()`. */
export interface ModuleCommand<Args = unknown> {
  /** Its name on the control channel (`<module>.<verb>`); src/main.ts maps the CLI's words to it. */
  readonly name: string;
  /** Validates the request's `args`; a request it refuses runs nothing. */
  readonly args: ControlCommand<Args>['args'];
  run(ctx: CommandContext, args: Args): Promise<ControlOutput>;
}

/** Declares an operator's command: its name, the schema of its arguments and what it does. */
export function command<Args>(name: string, spec: Omit<ModuleCommand<Args>, 'name'>): ModuleCommand<Args> {
  return { name, ...spec };
}

/** One domain: its tables and how it is built from the platform and the modules it needs. */
export interface ModuleDefinition<Name extends string = string, Api = unknown, Needs = never> {
  name: Name;
  /**
   * The tables of migrations/ this module owns: only its SQL names them, and other modules reach
   * their rows through its API or the SQL fragments its index.ts exports (docs/modules.md).
   */
  tables: readonly string[];
  /** Modules whose API `setup` receives; each must come earlier in the module list. */
  needs: readonly (keyof Needs & string)[];
  /**
   * Operators' commands (`atrium economy verify`): a running server serves them on its control
   * channel, and with none running the CLI runs them itself on the database it opens. Declared
   * beside `setup`, not returned by it, so that running one builds no module.
   */
  commands?: readonly ModuleCommand[];
  /** May be async, for a module that loads part of itself only when configured (a backend's library). */
  setup(platform: Platform, needs: Needs): ModuleParts<Api> | Promise<ModuleParts<Api>>;
}

/**
 * Declares a module. `Needs` names the APIs it uses, e.g. `{ users: UsersApi }`; the type is
 * imported from the other module's index.ts, the only file of another module one may import.
 */
export function defineModule<const Name extends string, Api, Needs = Record<never, never>>(
  definition: ModuleDefinition<Name, Api, Needs>,
): ModuleDefinition<Name, Api, Needs> {
  return definition;
}

/** The APIs of a module list, by module name. */
export type ModuleApis<Modules extends readonly ModuleDefinition[]> = {
  [M in Modules[number] as M['name']]: M extends ModuleDefinition<string, infer Api, infer _> ? Api : never;
};

/**
 * Builds each module in list order, handing it the APIs it declared. A module that needs one not
 * built yet is an ordering mistake, reported at startup rather than as an undefined at runtime.
 */
export async function setupModules(
  platform: Platform,
  modules: readonly ModuleDefinition[],
): Promise<{ name: string; parts: ModuleParts<unknown> }[]> {
  const apis = new Map<string, unknown>();
  const built: { name: string; parts: ModuleParts<unknown> }[] = [];
  for (const module of modules) {
    if (apis.has(module.name)) throw new Error(`Module ${module.name} is listed twice.`);
    const needs: Record<string, unknown> = {};
    for (const name of module.needs) {
      if (!apis.has(name)) {
        throw new Error(`Module ${module.name} needs ${name}, which must come earlier in the module list.`);
      }
      needs[name] = apis.get(name);
    }
    const parts = await (
      module.setup as (
        platform: Platform,
        needs: unknown,
      ) => ModuleParts<unknown> | Promise<ModuleParts<unknown>>
    )(platform, needs);
    apis.set(module.name, parts.api);
    built.push({ name: module.name, parts });
  }
  return built;
}

/**
 * Registers on `channel` the commands a module list declares, each run with the handle `data`
 * gives. A command name declared twice stops the start, naming the modules that declare it.
 */
export function registerCommands(
  channel: ControlChannel,
  modules: readonly ModuleDefinition[],
  data: () => DataAccess,
): ControlChannel {
  const declaredBy = new Map<string, string>();
  for (const module of modules) {
    for (const { name, args, run } of module.commands ?? []) {
      const earlier = declaredBy.get(name);
      if (earlier !== undefined) {
        throw new Error(
          `The command ${name} is declared twice, by module ${earlier} and by module ${module.name}.`,
        );
      }
      declaredBy.set(name, module.name);
      channel.register(name, { args, run: (ctx, parsed) => run({ ...ctx, data: data() }, parsed) });
    }
  }
  return channel;
}
