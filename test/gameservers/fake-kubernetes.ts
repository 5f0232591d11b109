import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * A small real Kubernetes API server for the agones spawner's tests: the GameServer and
 * GameServerAllocation paths only, answering with the shapes Agones documents (GameServer status
 * state/address/addresses/ports/nodeName, GameServerAllocation status) and Kubernetes `Status`
 * objects on errors. Tests drive the GameServers' states and inject failures.
 */

export interface GameServerStatus {
  state: string;
  address: string;
  addresses: Array<{ type: string; address: string }>;
  ports: Array<{ name: string; port: number }>;
  nodeName: string;
}

export interface FakeGameServer {
  apiVersion: 'agones.dev/v1';
  kind: 'GameServer';
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
    generateName?: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    deletionTimestamp?: string;
  };
  // biome-ignore lint/suspicious/noExplicitAny: a GameServer spec is whatever the client posted.
  spec: any;
  status: GameServerStatus;
}

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: unknown;
}

export interface FailureRule {
  method?: string;
  resource?: 'gameservers' | 'gameserverallocations';
  /** The HTTP status to answer with, or 'hang' to never answer. */
  code: number | 'hang';
  /** How many matching requests fail; default 1. */
  times?: number;
  /** The Status message; Kubernetes' validation messages can quote the posted fields. */
  message?: string;
}

const TOKEN = 'fake-kubernetes-bearer-token';
const GS_PATH = /^\/apis\/agones\.dev\/v1\/namespaces\/([^/]+)\/gameservers(?:\/([^/]+))?$/;
const GSA_PATH = /^\/apis\/allocation\.agones\.dev\/v1\/namespaces\/([^/]+)\/gameserverallocations$/;
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

const reasons: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'AlreadyExists',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

export class FakeKubernetes {
  readonly gameServers = new Map<string, FakeGameServer>();
  readonly requests: RecordedRequest[] = [];
  private readonly failures: FailureRule[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private autoReadyMs: number | undefined;
  /** Every answer waits this long, as a busy API server would. */
  latencyMs = 0;
  private nextPort = 7000;
  private resourceVersion = 1;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeKubernetes> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const fake = new FakeKubernetes(server, `http://127.0.0.1:${port}`);
    server.on('request', (req, res) => void fake.handle(req, res));
    return fake;
  }

  /** A KubeConfig pointing at this server, with a bearer-token user, as a cluster admin would write it. */
  kubeConfig(namespace = 'default'): KubeConfig {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'atrium', token: TOKEN }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'atrium', namespace }],
      currentContext: 'fake',
    });
    return kubeConfig;
  }

  /** New GameServers go Scheduled, RequestReady, then Ready over `ms`; undefined turns this off. */
  autoReady(ms: number | undefined): void {
    this.autoReadyMs = ms;
  }

  /** Sets a GameServer's state as Agones' controller would; address and port fill status.address/ports. */
  setState(name: string, state: string, where: { address?: string; port?: number } = {}): void {
    const gameServer = this.gameServers.get(name);
    if (!gameServer) throw new Error(`No GameServer ${name}`);
    gameServer.status.state = state;
    if (where.address !== undefined) {
      gameServer.status.address = where.address;
      gameServer.status.addresses = [{ type: 'InternalIP', address: where.address }];
      gameServer.status.nodeName = 'node-1';
    }
    if (where.port !== undefined) {
      gameServer.status.ports = [{ name: gameServer.spec?.ports?.[0]?.name ?? 'default', port: where.port }];
    }
    gameServer.metadata.resourceVersion = String(this.resourceVersion++);
  }

  /** Deletes a GameServer behind the client's back (an operator, or Agones cleaning up). */
  remove(name: string): void {
    this.gameServers.delete(name);
  }

  /** Pre-creates `count` Ready GameServers of a Fleet, as the Fleet controller keeps them. */
  addFleet(fleet: string, count: number, namespace = 'default'): FakeGameServer[] {
    const created: FakeGameServer[] = [];
    for (let i = 0; i < count; i++) {
      const name = `${fleet}-${suffix()}-${suffix()}`;
      const gameServer = this.store(namespace, name, { labels: { 'agones.dev/fleet': fleet } }, {});
      this.setState(gameServer.metadata.name, 'Ready', { address: '10.0.0.7', port: this.nextPort++ });
      created.push(gameServer);
    }
    return created;
  }

  fail(rule: FailureRule): void {
    this.failures.push({ times: 1, ...rule });
  }

  clearFailures(): void {
    this.failures.length = 0;
  }

  /** Recorded requests of one method to one resource. */
  requestsTo(method: string, resource: 'gameservers' | 'gameserverallocations'): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && r.path.includes(`/${resource}`));
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', this.url).pathname;
    const method = req.method ?? 'GET';
    const text = await readBody(req);
    let body: unknown;
    let answer: Reply | 'hang' | undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      answer = statusReply(400, 'the request body is not JSON');
    }
    this.requests.push({ method, path, authorization: req.headers.authorization, body });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) answer = statusReply(401, 'Unauthorized');
    answer ??= this.route(method, path, body);
    if (this.latencyMs) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    if (answer === 'hang') return;
    res.writeHead(answer.code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  }

  private route(method: string, path: string, body: unknown): Reply | 'hang' {
    const gs = GS_PATH.exec(path);
    const gsa = GSA_PATH.exec(path);
    const resource = gs ? 'gameservers' : gsa ? 'gameserverallocations' : undefined;
    const failure = this.failures.find(
      (r) => (r.method ?? method) === method && (r.resource ?? resource) === resource && (r.times ?? 0) > 0,
    );
    if (failure) {
      failure.times = (failure.times ?? 1) - 1;
      if (failure.code === 'hang') return 'hang';
      return statusReply(failure.code, failure.message ?? `injected failure ${failure.code}`);
    }
    if (gs) {
      const [, namespace = 'default', name] = gs;
      if (name === undefined && method === 'POST') return this.createGameServer(namespace, body);
      if (name !== undefined && method === 'GET') return this.getGameServer(namespace, name);
      if (name !== undefined && method === 'DELETE') return this.deleteGameServer(namespace, name);
      return statusReply(405, `${method} is not supported here`);
    }
    if (gsa) {
      if (method !== 'POST') return statusReply(405, `${method} is not supported here`);
      return this.allocate(gsa[1] ?? 'default', body);
    }
    return statusReply(404, 'the server could not find the requested resource');
  }

  private createGameServer(namespace: string, body: unknown): Reply {
    // biome-ignore lint/suspicious/noExplicitAny: the posted document, checked field by field.
    const document = body as any;
    if (document?.kind !== 'GameServer' || document?.apiVersion !== 'agones.dev/v1')
      return statusReply(400, 'expected an agones.dev/v1 GameServer');
    const { name, generateName } = document.metadata ?? {};
    if (!name && !generateName) return statusReply(422, 'name or generateName is required');
    if (name && this.gameServers.has(name))
      return statusReply(409, `gameservers.agones.dev "${name}" already exists`);
    const gameServer = this.store(
      namespace,
      name ?? `${generateName}${suffix()}`,
      document.metadata,
      document.spec,
    );
    // Agones' webhook starts a GameServer with dynamic ports in PortAllocation, others in Creating.
    const dynamic = (document.spec?.ports ?? []).some(
      (p: { portPolicy?: string }) => p.portPolicy !== 'Static',
    );
    gameServer.status.state = dynamic ? 'PortAllocation' : 'Creating';
    if (this.autoReadyMs !== undefined) this.walkToReady(gameServer.metadata.name, this.autoReadyMs);
    return reply(201, gameServer);
  }

  private getGameServer(namespace: string, name: string): Reply {
    const gameServer = this.gameServers.get(name);
    if (!gameServer || gameServer.metadata.namespace !== namespace)
      return statusReply(404, `gameservers.agones.dev "${name}" not found`, name);
    return reply(200, gameServer);
  }

  private deleteGameServer(namespace: string, name: string): Reply {
    const gameServer = this.gameServers.get(name);
    if (!gameServer || gameServer.metadata.namespace !== namespace)
      return statusReply(404, `gameservers.agones.dev "${name}" not found`, name);
    this.gameServers.delete(name);
    // Agones' finalizer keeps the object a moment: the answer is the object, marked for deletion.
    return reply(200, { ...gameServer, metadata: { ...gameServer.metadata, deletionTimestamp: now() } });
  }

  private allocate(namespace: string, body: unknown): Reply {
    // biome-ignore lint/suspicious/noExplicitAny: the posted document, checked field by field.
    const document = body as any;
    if (document?.kind !== 'GameServerAllocation' || document?.apiVersion !== 'allocation.agones.dev/v1')
      return statusReply(400, 'expected an allocation.agones.dev/v1 GameServerAllocation');
    const selectors: Array<{ matchLabels?: Record<string, string> }> = document.spec?.selectors ?? [];
    const candidates = [...this.gameServers.values()].filter(
      (g) => g.metadata.namespace === namespace && g.status.state === 'Ready',
    );
    const match = selectors
      .map((s) =>
        candidates.find((g) =>
          Object.entries(s.matchLabels ?? {}).every(([key, value]) => g.metadata.labels[key] === value),
        ),
      )
      .find((g) => g !== undefined);
    const answer = {
      apiVersion: 'allocation.agones.dev/v1',
      kind: 'GameServerAllocation',
      metadata: { namespace, creationTimestamp: now() },
      spec: document.spec,
    };
    if (!match) return reply(201, { ...answer, status: { state: 'UnAllocated', gameServerName: '' } });
    match.status.state = 'Allocated';
    Object.assign(match.metadata.labels, document.spec?.metadata?.labels);
    Object.assign(match.metadata.annotations, document.spec?.metadata?.annotations);
    return reply(201, {
      ...answer,
      metadata: { ...answer.metadata, name: match.metadata.name },
      status: {
        state: 'Allocated',
        gameServerName: match.metadata.name,
        ports: match.status.ports,
        address: match.status.address,
        addresses: match.status.addresses,
        nodeName: match.status.nodeName,
        source: 'local',
        metadata: { labels: match.metadata.labels, annotations: match.metadata.annotations },
      },
    });
  }

  private walkToReady(name: string, ms: number): void {
    const port = this.nextPort++;
    const steps: Array<[number, string]> = [
      [ms / 3, 'Scheduled'],
      [(2 * ms) / 3, 'RequestReady'],
      [ms, 'Ready'],
    ];
    for (const [at, state] of steps) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        if (this.gameServers.has(name)) this.setState(name, state, { address: '10.0.0.9', port });
      }, at);
      this.timers.add(timer);
    }
  }

  private store(
    namespace: string,
    name: string,
    metadata: {
      generateName?: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    },
    spec: unknown,
  ): FakeGameServer {
    const gameServer: FakeGameServer = {
      apiVersion: 'agones.dev/v1',
      kind: 'GameServer',
      metadata: {
        name,
        namespace,
        uid: randomUUID(),
        resourceVersion: String(this.resourceVersion++),
        creationTimestamp: now(),
        ...(metadata.generateName ? { generateName: metadata.generateName } : {}),
        labels: { ...metadata.labels },
        annotations: { ...metadata.annotations },
      },
      spec,
      status: { state: 'Creating', address: '', addresses: [], ports: [], nodeName: '' },
    };
    this.gameServers.set(name, gameServer);
    return gameServer;
  }
}

type Reply = { code: number; body: unknown };

function reply(code: number, body: unknown): Reply {
  return { code, body };
}

/** A Kubernetes `Status` failure, as the API server writes it. */
function statusReply(code: number, message: string, name?: string): Reply {
  return reply(code, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: reasons[code] ?? 'Unknown',
    ...(name ? { details: { name, group: 'agones.dev', kind: 'gameservers' } } : {}),
    code,
  });
}

function suffix(): string {
  let out = '';
  for (let i = 0; i < 5; i++) out += NAME_ALPHABET[Math.floor(Math.random() * NAME_ALPHABET.length)];
  return out;
}

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
