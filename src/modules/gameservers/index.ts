import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  adminServersList,
  gameServersGet,
  gameServersSpawn,
  gameServersStop,
  internalStatusReport,
  serversInvite,
  usersJoinFriend,
  worldsJoin,
} from '../../../protocol/gameservers.js';
import { ofServices } from '../../platform/auth/principal.js';
import type { Logger } from '../../platform/log.js';
import { defineModule, type Platform } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import { StartupError } from '../../platform/startup-error.js';
import type { AuditApi } from '../audit/index.js';
import type { DiscoveryApi } from '../discovery/index.js';
import type { PartiesApi } from '../parties/index.js';
import type { PresenceApi } from '../presence/index.js';
import type { SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import type { WorldsApi } from '../worlds/index.js';
import { joinFriend } from './friend-join.js';
import { GameServersService } from './gameservers.service.js';
import { launchCommand } from './launch-command.js';
import { LocalSpawner } from './local-spawner.js';
import { ServerInvites } from './server-invites.js';
import { ENDED_SERVERS_TOPIC } from './server-lifecycle.js';
import { SERVER_TOKEN_PREFIX } from './server-tokens.js';
import { SpawnAdmission } from './spawn-admission.js';
import type { Spawner } from './spawner.js';

/**
 * The backend GAMESERVER_SPAWNER names: child processes here, or GameServers on Kubernetes. The
 * agones backend and its Kubernetes client load only when chosen: that library alone added some
 * 40 MB to every process.
 */
async function spawnerFor(config: Platform['config'], log: Logger): Promise<Spawner> {
  if (config.GAMESERVER_SPAWNER === 'local') {
    return new LocalSpawner({
      command: launchCommand(config.GAMESERVER_COMMAND),
      maxRunning: config.GAMESERVER_MAX_RUNNING,
      stopGraceMs: config.GAMESERVER_STOP_GRACE_MS,
      publicHost: config.GAMESERVER_PUBLIC_HOST,
      log,
    });
  }
  const { AgonesSpawner, parseGameServerTemplate } = await import('./agones-spawner.js');
  const create = config.GAMESERVER_AGONES_MODE === 'create';
  const templateFile = config.GAMESERVER_AGONES_TEMPLATE ?? DEFAULT_AGONES_TEMPLATE;
  return new AgonesSpawner({
    namespace: config.GAMESERVER_AGONES_NAMESPACE,
    mode: config.GAMESERVER_AGONES_MODE,
    fleet: config.GAMESERVER_AGONES_FLEET,
    ...(create ? { template: parseGameServerTemplate(readTemplate(templateFile)) } : {}),
    ...(config.GAMESERVER_AGONES_CONTAINER ? { container: config.GAMESERVER_AGONES_CONTAINER } : {}),
    pollIntervalMs: config.GAMESERVER_AGONES_POLL_MS,
    requestTimeoutMs: config.GAMESERVER_AGONES_REQUEST_TIMEOUT_MS,
    log,
  });
}

const DEFAULT_AGONES_TEMPLATE = fileURLToPath(
  new URL('../../../deploy/agones/gameserver-template.yaml', import.meta.url),
);

function readTemplate(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new StartupError(`GAMESERVER_AGONES_TEMPLATE: cannot read ${path} (${(error as Error).message})`);
  }
  return text;
}

/** How often the records and the running servers are reconciled (docs/gameservers.md). */
const RECONCILE_INTERVAL_MS = 2_000;

/**
 * What tests may look at: the spawner, which knows the servers this node runs, and the sweeps of
 * idle servers and of dead nodes' servers, run at a chosen time (the reconcile timer runs them at
 * the present).
 */
export interface GameServersApi {
  spawner: Spawner;
  stopIdle(now: Date): Promise<string[]>;
  stopOrphaned(now: Date): Promise<string[]>;
}

/**
 * Dedicated game servers (docs/gameservers.md): spawn, get, stop and join for users, instance
 * access (server invitations, the join of a friend), a party's join together, the internal API's
 * token check and status report for the servers themselves.
 */
export const gameServersModule = defineModule({
  name: 'gameservers',
  tables: [
    'game_servers',
    'game_server_reservations',
    'game_server_invitations',
    'game_server_party_follows',
  ],
  needs: ['users', 'social', 'worlds', 'discovery', 'audit', 'presence', 'parties'],
  async setup(
    platform,
    {
      users,
      social,
      worlds,
      discovery,
      audit,
      presence,
      parties,
    }: {
      users: UsersApi;
      social: SocialApi;
      worlds: WorldsApi;
      discovery: DiscoveryApi;
      audit: AuditApi;
      presence: PresenceApi;
      parties: PartiesApi;
    },
  ) {
    const { config, log, bus, kv } = platform;
    const spawner = await spawnerFor(config, log);
    // A wildcard bind address is not one to call: local servers call over loopback then. An IPv6
    // address takes brackets in a URL.
    const bound = ['0.0.0.0', '::'].includes(config.HOST) ? '127.0.0.1' : config.HOST;
    const host = bound.includes(':') ? `[${bound}]` : bound;
    let apiUrl = config.GAMESERVER_API_URL ?? `http://${host}:${config.HTTP_PORT}`;
    let wsUrl = config.GAMESERVER_WS_URL ?? `ws://${host}:${config.WS_PORT}/ws`;
    const systemCtx = () => platform.ctx({ user: null, log, ip: 'internal' });
    const service = new GameServersService({
      spawner,
      worlds,
      visits: discovery,
      audit,
      bus,
      log,
      admission: new SpawnAdmission({
        spawner,
        limiter: createLimiter(kv, {
          keyPrefix: 'gameserver-spawn',
          points: config.GAMESERVER_SPAWN_RATE_LIMIT_COUNT,
          durationSeconds: config.GAMESERVER_SPAWN_RATE_LIMIT_WINDOW_SECONDS,
        }),
        liveLimit: config.GAMESERVER_MAX_LIVE_PER_USER,
      }),
      readyTimeoutMs: config.GAMESERVER_READY_TIMEOUT_MS,
      maxPlayers: config.GAMESERVER_MAX_PLAYERS,
      idleStopMs: config.GAMESERVER_IDLE_STOP_SECONDS * 1000,
      apiUrl: () => apiUrl,
      wsUrl: () => wsUrl,
      systemData: () => systemCtx().data,
      nodeId: presence.nodeId,
      nodes: presence,
      nodeLeaseMs: config.NODE_LEASE_SECONDS * 1000,
      outbox: platform.outbox,
      party: { parties, presence },
      social,
    });
    const invites = new ServerInvites({
      bus,
      users,
      social,
      // Invitations spend from a bucket of their own, apart from friend requests and follows.
      limiter: createLimiter(kv, {
        keyPrefix: 'invites',
        points: config.SOCIAL_RATE_LIMIT_COUNT,
        durationSeconds: config.SOCIAL_RATE_LIMIT_WINDOW_SECONDS,
      }),
    });
    const friendJoins = { joins: service.joins, worlds, users, social, presence };
    // Server tokens are the platform's service tokens: /internal routes and the socket take them.
    platform.serviceTokens.provide({
      prefix: SERVER_TOKEN_PREFIX,
      name: 'game server token',
      verify: (token) => service.principalOf(systemCtx(), token),
    });
    let reconciler: NodeJS.Timeout | undefined;
    let stopClosingSockets: (() => Promise<void>) | undefined;
    worlds.onDeleting((tx, worldId) => service.beforeWorldDeleted(tx, worldId));
    // A deleted world's servers went with it (their rows cascade, so their tokens are dead): every
    // node closes their sockets with 4403 now, and each node's reconcile stops the processes.
    worlds.onDeleted((worldId) =>
      bus.publishCommitted(
        ENDED_SERVERS_TOPIC,
        { t: 'gameservers.ended', d: { server_ids: [], world_ids: [worldId] } },
        log,
      ),
    );
    return {
      api: {
        spawner,
        stopIdle: (now) => service.stopIdle(now),
        stopOrphaned: (now) => service.stopOrphaned(now),
      } satisfies GameServersApi,
      operations: [
        serve(gameServersSpawn, (ctx, { world_id }) => service.spawn(ctx, world_id)),
        serve(gameServersGet, (ctx, { server_id }) => service.get(ctx, server_id)),
        serve(gameServersStop, async (ctx, { server_id }) => {
          await service.stop(ctx, server_id);
          return null;
        }),
        serve(worldsJoin, (ctx, { world_id, ...options }) => service.join(ctx, world_id, options)),
        serve(serversInvite, (ctx, { server_id, user_id }) => invites.invite(ctx, server_id, user_id)),
        serve(usersJoinFriend, (ctx, { user_id }) => joinFriend(friendJoins, ctx, user_id)),
        serve(adminServersList, (ctx, query) => service.adminList(ctx, query)),
        serve(internalStatusReport, (ctx, report) => service.report(ctx, report)),
      ],
      start: async ({ httpPort, wsPort }) => {
        stopClosingSockets = await bus.subscribe(ENDED_SERVERS_TOPIC, (event) => {
          const { server_ids, world_ids } = event.d as { server_ids: string[]; world_ids?: string[] };
          platform.gateway.endSessions(ofServices(server_ids, world_ids), 'game server ended');
        });
        // Port 0 picks a free port: the servers are told the one chosen.
        if (!config.GAMESERVER_API_URL) apiUrl = `http://${host}:${httpPort}`;
        if (!config.GAMESERVER_WS_URL) wsUrl = `ws://${host}:${wsPort}/ws`;
        reconciler = setInterval(() => {
          service.reconcile().catch((err) => log.warn({ err }, 'reconciling game servers failed'));
        }, RECONCILE_INTERVAL_MS);
        reconciler.unref();
      },
      stop: async () => {
        clearInterval(reconciler);
        await stopClosingSockets?.();
        await service.close();
      },
    };
  },
});
