import {
  ApiException,
  CustomObjectsApi,
  createConfiguration,
  KubeConfig,
  loadYaml,
  type RequestContext,
  type ResponseContext,
  ServerConfiguration,
} from '@kubernetes/client-node';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { StartupError } from '../../platform/startup-error.js';
import { launchArguments } from './launch-command.js';
import type { Spawner, SpawnListener, SpawnRequest } from './spawner.js';

/**
 * The Kubernetes calls this spawner makes, by resource and verb. deploy/agones/rbac.yaml grants
 * exactly these (a test compares the two), and every call below names its resource and verb
 * through this table, so a call the Role does not allow fails to type-check.
 */
export const KUBERNETES_PERMISSIONS = {
  gameservers: { group: 'agones.dev', version: 'v1', verbs: ['create', 'get', 'delete'] },
  gameserverallocations: { group: 'allocation.agones.dev', version: 'v1', verbs: ['create'] },
} as const;

type Resource = keyof typeof KUBERNETES_PERMISSIONS;
type Verb = (typeof KUBERNETES_PERMISSIONS)[Resource]['verbs'][number];
type ResourceAllowing<V extends Verb> = {
  [R in Resource]: V extends (typeof KUBERNETES_PERMISSIONS)[R]['verbs'][number] ? R : never;
}[Resource];

/** The labels and annotations a game server finds on its own GameServer (docs/gameservers-agones.md). */
export const AGONES_METADATA = {
  serverId: 'atrium.dev/server-id',
  worldId: 'atrium.dev/world-id',
  token: 'atrium.dev/server-token',
  apiUrl: 'atrium.dev/api-url',
  wsUrl: 'atrium.dev/ws-url',
  fleet: 'agones.dev/fleet',
} as const;

/** pino-like: (fields, message). */
export type AgonesLog = Record<'info' | 'warn' | 'error', (obj: object, msg: string) => void>;

/** A GameServer document without name or status: what `create` mode posts, args added. */
export interface GameServerTemplate {
  apiVersion?: string;
  kind?: string;
  metadata?: { labels?: Record<string, string>; [key: string]: unknown };
  spec: {
    container?: string;
    template: { spec: { containers: Array<{ name: string; args?: string[]; [key: string]: unknown }> } };
    [key: string]: unknown;
  };
}

export interface AgonesSpawnerOptions {
  /** Defaults to the usual lookup: KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
  kubeConfig?: KubeConfig;
  namespace: string;
  mode: 'allocate' | 'create';
  /** `allocate`: the Fleet whose Ready GameServers are allocated. */
  fleet?: string;
  /** `create`: the GameServer to create for each spawn. */
  template?: GameServerTemplate;
  /** `create`: the container that receives the launch arguments; default spec.container, else the first. */
  container?: string;
  pollIntervalMs?: number;
  /** A Kubernetes request that takes longer counts as the API being unreachable. */
  requestTimeoutMs?: number;
  log: AgonesLog;
}

/** What this spawner reads of a GameServer's (or an allocation's) status. */
interface ObservedStatus {
  state?: string;
  address?: string;
  ports?: Array<{ name?: string; port?: number }>;
}

interface Tracked {
  serverId: string;
  listener: SpawnListener;
  /** Known once the create or allocate call answered. */
  name?: string;
  /** The status the create or allocate answer carried, observed before the first poll. */
  seed?: ObservedStatus;
  launched?: Promise<void>;
  timer?: NodeJS.Timeout;
  ready: boolean;
  /** Stopped, ended or closed: nothing more is reported. */
  done: boolean;
}

const NOT_FOUND = 404;

export class AgonesSpawner implements Spawner {
  readonly kind = 'agones' as const;
  private readonly api: CustomObjectsApi;
  private readonly servers = new Map<string, Tracked>();
  private readonly pollIntervalMs: number;
  private readonly container: string | undefined;

  constructor(private readonly options: AgonesSpawnerOptions) {
    this.api = customObjectsApi(options);
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    if (options.mode === 'allocate' && !options.fleet)
      throw new StartupError('The agones spawner in allocate mode needs the name of a Fleet');
    if (options.mode === 'create') {
      if (!options.template)
        throw new StartupError('The agones spawner in create mode needs a GameServer template');
      const template = checkGameServerTemplate(options.template);
      this.container =
        options.container ?? template.spec.container ?? template.spec.template.spec.containers[0]?.name;
      if (!template.spec.template.spec.containers.some((c) => c.name === this.container))
        throw new StartupError(`The GameServer template has no container named ${this.container}`);
    }
  }

  get running(): number {
    return this.servers.size;
  }

  /** Includes servers whose create or allocate call is still under way. */
  runningIds(): string[] {
    return [...this.servers.keys()];
  }

  async start(request: SpawnRequest, listener: SpawnListener): Promise<void> {
    if (this.servers.has(request.serverId)) throw new Error(`Game server ${request.serverId} already runs`);
    const tracked: Tracked = { serverId: request.serverId, listener, ready: false, done: false };
    this.servers.set(request.serverId, tracked);
    tracked.launched =
      this.options.mode === 'create' ? this.create(request, tracked) : this.allocate(request, tracked);
    try {
      await tracked.launched;
    } catch (error) {
      if (this.servers.get(request.serverId) === tracked) this.servers.delete(request.serverId);
      throw error;
    }
    // A stop that arrived while the call was under way deletes what it created (see stop()).
    if (!tracked.done) this.schedule(tracked, 0);
  }

  async stop(serverId: string): Promise<void> {
    const tracked = this.servers.get(serverId);
    if (!tracked) return;
    this.finish(tracked);
    await tracked.launched?.catch(() => undefined);
    if (tracked.name) await this.deleteGameServer(tracked.name, serverId);
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((serverId) => this.stop(serverId)));
  }

  private async create(request: SpawnRequest, tracked: Tracked): Promise<void> {
    const template = structuredClone(this.options.template as GameServerTemplate);
    // The name comes from generateName, the namespace from the spawner's setting.
    const { name: _name, namespace: _namespace, ...metadata } = template.metadata ?? {};
    const body = {
      ...template,
      apiVersion: 'agones.dev/v1',
      kind: 'GameServer',
      metadata: {
        ...metadata,
        generateName: 'atrium-',
        labels: { ...template.metadata?.labels, ...identity(request) },
      },
    };
    const container = body.spec.template.spec.containers.find((c) => c.name === this.container);
    if (container) container.args = [...(container.args ?? []), ...launchArguments(request)];
    const created = (await this.call(request, 'create', () =>
      this.send('create', 'gameservers', { body }),
    )) as { metadata?: { name?: string }; status?: ObservedStatus };
    tracked.name = created.metadata?.name;
    tracked.seed = created.status;
    const fields = { serverId: request.serverId, worldId: request.worldId, gameServer: tracked.name };
    this.options.log.info(fields, 'Created an Agones GameServer');
  }

  private async allocate(request: SpawnRequest, tracked: Tracked): Promise<void> {
    const body = {
      apiVersion: 'allocation.agones.dev/v1',
      kind: 'GameServerAllocation',
      spec: {
        selectors: [{ matchLabels: { [AGONES_METADATA.fleet]: this.options.fleet } }],
        metadata: {
          labels: identity(request),
          annotations: {
            ...identity(request),
            [AGONES_METADATA.token]: request.token,
            [AGONES_METADATA.apiUrl]: request.apiUrl,
            [AGONES_METADATA.wsUrl]: request.wsUrl,
          },
        },
      },
    };
    const allocation = (await this.call(request, 'allocate', () =>
      this.send('create', 'gameserverallocations', { body }),
    )) as { status?: ObservedStatus & { gameServerName?: string } };
    const status = allocation.status ?? {};
    if (status.state !== 'Allocated' || !status.gameServerName) {
      const fields = { serverId: request.serverId, fleet: this.options.fleet, state: status.state };
      this.options.log.warn(fields, 'Agones had no GameServer to allocate');
      throw retryLater(ErrorCode.GAMESERVER_CAPACITY, 'No game server is available');
    }
    tracked.name = status.gameServerName;
    tracked.seed = status;
    const fields = { serverId: request.serverId, worldId: request.worldId, gameServer: tracked.name };
    this.options.log.info({ ...fields, fleet: this.options.fleet }, 'Allocated an Agones GameServer');
  }

  /**
   * Runs one launching call and turns its failure into the AppError the service expects, logging
   * only what cannot carry the token (status, reason, and a message with the token cut out).
   */
  private async call(request: SpawnRequest, action: 'create' | 'allocate', send: () => Promise<unknown>) {
    try {
      return await send();
    } catch (error) {
      const { code, fields: failure } = failureOf(error, request.token);
      const fields = { serverId: request.serverId, worldId: request.worldId, action, ...failure };
      // Agones' allocator answers 429 (no GameServer) or 409 (contention) instead of a status
      // state when it runs as a separate processor.
      if (action === 'allocate' && (code === 429 || code === 409)) {
        this.options.log.warn(fields, 'Agones had no GameServer to allocate');
        throw retryLater(ErrorCode.GAMESERVER_CAPACITY, 'No game server is available');
      }
      this.options.log.error(fields, 'The Kubernetes API did not start the game server');
      throw retryLater(ErrorCode.GAMESERVER_UNAVAILABLE, 'The game server backend is unavailable');
    }
  }

  private schedule(tracked: Tracked, delayMs = this.pollIntervalMs): void {
    tracked.timer = setTimeout(() => void this.poll(tracked), delayMs);
    tracked.timer.unref();
  }

  private async poll(tracked: Tracked): Promise<void> {
    if (tracked.done || !tracked.name) return;
    const seed = tracked.seed;
    tracked.seed = undefined;
    const status = seed ?? (await this.read(tracked, tracked.name));
    if (tracked.done) return;
    if (status) this.observe(tracked, status);
    if (!tracked.done) this.schedule(tracked);
  }

  /** The GameServer's status; undefined once it is gone, or after a passing API error (polling goes on). */
  private async read(tracked: Tracked, name: string): Promise<ObservedStatus | undefined> {
    try {
      const gameServer = (await this.send('get', 'gameservers', { name })) as { status?: ObservedStatus };
      return gameServer.status ?? {};
    } catch (error) {
      const { code, fields } = failureOf(error);
      if (tracked.done) return undefined;
      if (code === NOT_FOUND) this.end(tracked, true, `GameServer ${name} was deleted`);
      else {
        const context = { serverId: tracked.serverId, gameServer: name, ...fields };
        this.options.log.warn(context, 'Could not read the GameServer; retrying');
      }
      return undefined;
    }
  }

  /** Readiness comes only from the state field; the other states before Ready mean "not yet". */
  private observe(tracked: Tracked, status: ObservedStatus): void {
    const state = status.state;
    if (state === 'Ready' || state === 'Allocated') {
      const port = status.ports?.[0]?.port;
      if (tracked.ready || !status.address || !port) return;
      tracked.ready = true;
      // An IPv6 address takes brackets in host:port.
      const address = `${status.address.includes(':') ? `[${status.address}]` : status.address}:${port}`;
      const fields = { serverId: tracked.serverId, gameServer: tracked.name, address };
      this.options.log.info(fields, 'GameServer is ready');
      this.report(tracked, () => tracked.listener.ready(tracked.serverId, address));
    } else if (state === 'Unhealthy' || state === 'Error') {
      this.end(tracked, true, `GameServer ${tracked.name} is ${state}`);
      // Nothing will bring it back; deleting it frees its node port (a Fleet replaces it).
      if (tracked.name) void this.deleteGameServer(tracked.name, tracked.serverId);
    } else if (state === 'Shutdown') {
      this.end(tracked, false, `GameServer ${tracked.name} shut down`);
    }
  }

  private end(tracked: Tracked, failed: boolean, reason: string): void {
    this.finish(tracked);
    const fields = { serverId: tracked.serverId, gameServer: tracked.name, failed, reason };
    this.options.log[failed ? 'warn' : 'info'](fields, 'GameServer ended');
    this.report(tracked, () => tracked.listener.ended(tracked.serverId, { failed, reason }));
  }

  private finish(tracked: Tracked): void {
    tracked.done = true;
    clearTimeout(tracked.timer);
    if (this.servers.get(tracked.serverId) === tracked) this.servers.delete(tracked.serverId);
  }

  private report(tracked: Tracked, notify: () => void): void {
    try {
      notify();
    } catch (error) {
      this.options.log.error({ serverId: tracked.serverId, err: error }, 'A spawn listener threw');
    }
  }

  private async deleteGameServer(name: string, serverId: string): Promise<void> {
    try {
      await this.send('delete', 'gameservers', { name });
      this.options.log.info({ serverId, gameServer: name }, 'Deleted the GameServer');
    } catch (error) {
      const { code, fields } = failureOf(error);
      if (code !== NOT_FOUND)
        this.options.log.warn({ serverId, gameServer: name, ...fields }, 'Could not delete the GameServer');
    }
  }

  /** Every Kubernetes call goes through here; the types let through only what the table allows. */
  private send<V extends Verb>(
    verb: V,
    plural: ResourceAllowing<V>,
    args: { name?: string; body?: object },
  ): Promise<unknown> {
    const { group, version } = KUBERNETES_PERMISSIONS[plural];
    const target = { group, version, plural, namespace: this.options.namespace };
    const name = args.name ?? '';
    if (verb === 'create') return this.api.createNamespacedCustomObject({ ...target, body: args.body });
    if (verb === 'get') return this.api.getNamespacedCustomObject({ ...target, name });
    return this.api.deleteNamespacedCustomObject({ ...target, name });
  }
}

function identity(request: SpawnRequest): Record<string, string> {
  return { [AGONES_METADATA.serverId]: request.serverId, [AGONES_METADATA.worldId]: request.worldId };
}

function retryLater(code: ErrorCode, what: string): AppError {
  return new AppError(code, `${what} right now; retry shortly.`, { retryAfterSeconds: 1 });
}

/** The client makeApiClient would build, plus a deadline on every request (fetch has none by default). */
function customObjectsApi(options: AgonesSpawnerOptions): CustomObjectsApi {
  const kubeConfig = options.kubeConfig ?? new KubeConfig();
  if (!options.kubeConfig) kubeConfig.loadFromDefault();
  const timeoutMs = options.requestTimeoutMs ?? 10_000;
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster)
    throw new StartupError('The Kubernetes configuration for the agones spawner has no current cluster');
  const timeout = {
    pre: async (context: RequestContext) => {
      context.setSignal(AbortSignal.timeout(timeoutMs));
      return context;
    },
    post: async (response: ResponseContext) => response,
  };
  return new CustomObjectsApi(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kubeConfig },
      promiseMiddleware: [timeout],
    }),
  );
}

/**
 * The parts of a failed call worth logging: the HTTP status, and Kubernetes' Status reason and
 * message, with `secret` cut out (a validation message can quote the posted fields).
 */
function failureOf(error: unknown, secret?: string) {
  let code: number | undefined;
  let status: { reason?: string; message?: string } = {};
  if (error instanceof ApiException) {
    code = error.code;
    try {
      status = typeof error.body === 'string' ? JSON.parse(error.body) : (error.body ?? {});
    } catch {}
  } else status = error instanceof Error ? { reason: error.name, message: error.message } : {};
  let detail = status.message ?? (code ? `HTTP ${code}` : String(error));
  if (secret) detail = detail.replaceAll(secret, '[redacted]');
  return { code, fields: { status: code, reason: status.reason, detail } };
}

/** Checks that a document is a usable GameServer template (one container at least), for startup. */
export function checkGameServerTemplate(document: unknown): GameServerTemplate {
  const spec = (document as GameServerTemplate | undefined)?.spec;
  const containers = spec?.template?.spec?.containers;
  if (!Array.isArray(containers) || !containers.length || containers.some((c) => typeof c?.name !== 'string'))
    throw new StartupError('The GameServer template needs spec.template.spec.containers, each with a name');
  const kind = (document as GameServerTemplate).kind;
  if (kind !== undefined && kind !== 'GameServer')
    throw new StartupError(`The GameServer template is a ${kind}, not a GameServer`);
  return document as GameServerTemplate;
}

/** Reads a GameServer template from YAML or JSON text (deploy/agones/gameserver-template.yaml). */
export function parseGameServerTemplate(text: string): GameServerTemplate {
  return checkGameServerTemplate(loadYaml(text));
}
