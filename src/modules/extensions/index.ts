import { operations } from '../../../protocol/operations.js';
import { defineModule } from '../../platform/module.js';
import type { EconomyApi } from '../economy/index.js';
import type { LeaderboardsApi } from '../leaderboards/index.js';
import type { NotificationsApi } from '../notifications/index.js';
import type { UsersApi } from '../users/index.js';
import { CallerDirectory } from './callers.js';
import { ExtensionCalls } from './calls.js';
import type { CtxServices } from './extension-ctx.js';
import { ExtensionsService } from './extensions.service.js';
import { loadExtensions } from './loader.js';
import { Registry } from './registry.js';
import { rpcFrames } from './rpc.frames.js';
import { rpcRoutes } from './rpc.routes.js';

/** What the console shows of the loaded extensions. */
export interface ExtensionsApi {
  /** Each loaded extension with its rpcs, hooks and event handlers, and the counts of their calls by outcome. */
  overview(): Promise<ExtensionOverview[]>;
}

export interface ExtensionOverview {
  name: string;
  path: string;
  functions: {
    kind: 'rpc' | 'before' | 'after' | 'event';
    name: string;
    auth?: 'user' | 'public' | 'server';
    calls: { ok: number; refused: number; error: number; timeout: number };
  }[];
}

/**
 * Server extensions (docs/extensions.md): the EXTENSIONS modules, loaded before any operation is
 * registered so their hooks are wired into the path every operation takes on both transports.
 */
export const extensionsModule = defineModule({
  name: 'extensions',
  tables: ['extension_storage', 'extension_storage_usage'],
  needs: ['users', 'economy', 'leaderboards', 'notifications'],
  async setup(
    platform,
    {
      users,
      economy,
      leaderboards,
      notifications,
    }: {
      users: UsersApi;
      economy: EconomyApi;
      leaderboards: LeaderboardsApi;
      notifications: NotificationsApi;
    },
  ) {
    const { config, log } = platform;
    const registry = new Registry();
    await loadExtensions(config.EXTENSIONS, registry);
    // A synchronous loop cannot be interrupted; the stall log names the calls that ran meanwhile.
    const calls = new ExtensionCalls(platform.metrics.registry, config.EXTENSION_TIMEOUT_MS, (call) =>
      platform.stalls.ended(call),
    );
    const services: CtxServices = {
      data: platform.db.data,
      grant: economy.grantAs,
      account: async (data, id) => {
        const [account] = await users.findAccounts(data, [id]);
        return (
          account && {
            id: account.id,
            username: account.username,
            created_at: account.created_at.toISOString(),
            roles: account.roles,
          }
        );
      },
      storageLimits: { maxRecords: config.EXTENSION_STORAGE_MAX_RECORDS },
      leaderboards: leaderboards.access,
      notifications,
    };
    const callers = new CallerDirectory(
      platform.db.data,
      async (data, id) => (await users.usernamesOf(data, [id]))[0]?.username,
    );
    const extensions = new ExtensionsService({ registry, calls, services, callers });

    for (const op of Object.values(operations)) {
      const hook = extensions.hookOf(op);
      if (hook) platform.hooks.set(op.name, hook);
    }
    platform.stalls.track(() => calls.running());
    const handlersPerType = new Map<string, number>();
    for (const handler of registry.events) {
      const key = `${handler.extension}:${handler.type}`;
      const n = (handlersPerType.get(key) ?? 0) + 1;
      handlersPerType.set(key, n);
      platform.outbox.consume({
        name: `extension:${key}:${n}`,
        type: handler.type,
        retry: {
          leaseSeconds: config.EXTENSION_EVENT_RETRY_SECONDS,
          maxAttempts: config.EXTENSION_EVENT_MAX_ATTEMPTS,
        },
        handle: (event) => extensions.handleEvent(handler, event, log),
      });
    }
    // Extensions' promises left rejected without a handler are logged; Node would end the process.
    const strayRejection = (reason: unknown) =>
      log.error({ err: reason }, 'a promise was rejected with no handler (an extension left it so?)');
    if (registry.extensions.length > 0) {
      process.on('unhandledRejection', strayRejection);
      log.info({ extensions: registry.extensions.map(({ name }) => name) }, 'extensions loaded');
    }

    return {
      api: {
        overview: () => overview(registry, calls),
      } satisfies ExtensionsApi,
      operations: rpcFrames(extensions),
      routes: rpcRoutes({
        rpcs: [...registry.rpcs.values()],
        extensions,
        tokens: platform.tokens,
        ctxOf: platform.ctx,
      }),
      async stop() {
        process.off('unhandledRejection', strayRejection);
      },
    };
  },
});

async function overview(registry: Registry, calls: ExtensionCalls): Promise<ExtensionOverview[]> {
  return Promise.all(
    registry.extensions.map(async ({ name, path }) => {
      const sites: {
        kind: ExtensionOverview['functions'][number]['kind'];
        name: string;
        auth?: 'user' | 'public' | 'server';
      }[] = [
        ...[...registry.rpcs.values()]
          .filter((rpc) => rpc.extension === name)
          .map((rpc) => ({ kind: 'rpc' as const, name: rpc.name, auth: rpc.auth })),
        ...[...registry.before]
          .filter(([, hooks]) => hooks.some((hook) => hook.extension === name))
          .map(([op]) => ({ kind: 'before' as const, name: op })),
        ...[...registry.after]
          .filter(([, hooks]) => hooks.some((hook) => hook.extension === name))
          .map(([op]) => ({ kind: 'after' as const, name: op })),
        ...[
          ...new Set(
            registry.events.filter((handler) => handler.extension === name).map((handler) => handler.type),
          ),
        ].map((type) => ({ kind: 'event' as const, name: type })),
      ];
      return {
        name,
        path,
        functions: await Promise.all(
          sites.map(async (site) => ({ ...site, calls: await calls.countsOf({ extension: name, ...site }) })),
        ),
      };
    }),
  );
}
