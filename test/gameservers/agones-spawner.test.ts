import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StartupError } from '../../src/config.js';
import {
  AgonesSpawner,
  type AgonesSpawnerOptions,
  type GameServerTemplate,
} from '../../src/modules/gameservers/agones-spawner.js';
import type { SpawnListener, SpawnRequest } from '../../src/modules/gameservers/spawner.js';
import { AppError, ErrorCode } from '../../src/platform/errors.js';
import { FakeKubernetes } from './fake-kubernetes.js';

/**
 * The agones spawner against a real HTTP server speaking the Kubernetes API (fake-kubernetes.ts):
 * what it posts, when it calls a server ready or ended, and how Kubernetes failures surface.
 */

const POLL_MS = 20;
const { GAMESERVER_UNAVAILABLE: UNAVAILABLE, GAMESERVER_CAPACITY: CAPACITY } = ErrorCode;
const TOKEN = 'gs_secret-token-that-must-never-be-logged-0123456789abcdef';

const SIDECAR = { name: 'sidecar', image: 'busybox' };
const GAME = { name: 'gameserver', image: 'atrium/gameserver-example:latest', args: ['--verbose'] };
const template: GameServerTemplate = {
  apiVersion: 'agones.dev/v1',
  kind: 'GameServer',
  metadata: { labels: { app: 'atrium-gameserver' } },
  spec: {
    container: 'gameserver',
    ports: [{ name: 'default', portPolicy: 'Dynamic', containerPort: 7777, protocol: 'UDP' }],
    health: { initialDelaySeconds: 5, periodSeconds: 5 },
    template: { spec: { containers: [SIDECAR, GAME] } },
  },
};

/** A listener that records what the spawner reports. */
function recorder() {
  const ready: Array<{ serverId: string; address: string }> = [];
  const ended: Array<{ serverId: string; failed: boolean; reason: string }> = [];
  const listener: SpawnListener = {
    ready: (serverId, address) => ready.push({ serverId, address }),
    ended: (serverId, outcome) => ended.push({ serverId, ...outcome }),
  };
  return { ready, ended, listener };
}

let fake: FakeKubernetes;
let logged: Array<{ level: string; obj: object; msg: string }>;
let spawners: AgonesSpawner[];
let sequence = 0;

beforeEach(async () => {
  fake = await FakeKubernetes.start();
  logged = [];
  spawners = [];
});

afterEach(async () => {
  await Promise.all(spawners.map((s) => s.close()));
  await fake.close();
});

function spawner(options: Partial<AgonesSpawnerOptions> = {}): AgonesSpawner {
  const push = (level: string) => (obj: object, msg: string) => logged.push({ level, obj, msg });
  const created = new AgonesSpawner({
    kubeConfig: fake.kubeConfig(),
    namespace: 'default',
    mode: 'create',
    template,
    pollIntervalMs: POLL_MS,
    log: { info: push('info'), warn: push('warn'), error: push('error') },
    ...options,
  });
  spawners.push(created);
  return created;
}

function request(): SpawnRequest {
  sequence++;
  return {
    serverId: `0190c0de-0000-7000-8000-${String(sequence).padStart(12, '0')}`,
    worldId: '0190c0de-0000-7000-8000-00000000a11d',
    token: TOKEN,
    apiUrl: 'http://atrium.default.svc:8080',
    wsUrl: 'ws://atrium.default.svc:8081/ws',
    mayTakeLastSlots: true,
  };
}

/** The name of the only GameServer the fake holds. */
function onlyGameServer(): string {
  const names = [...fake.gameServers.keys()];
  expect(names).toHaveLength(1);
  return names[0] as string;
}

const reads = () => fake.requestsTo('GET', 'gameservers').length;

/** Waits until the spawner has read the GameServer `count` more times. */
async function polls(count: number): Promise<void> {
  const before = reads();
  await vi.waitFor(() => expect(reads()).toBeGreaterThanOrEqual(before + count));
}

/** The labels (and annotations) naming a spawn, as a game server and an operator see them. */
function ids(spawn: SpawnRequest): Record<string, string> {
  return { 'atrium.dev/server-id': spawn.serverId, 'atrium.dev/world-id': spawn.worldId };
}

/** Starts a server and has Agones call its GameServer Ready; returns the GameServer's name. */
async function startReady(agones: AgonesSpawner, spawn: SpawnRequest, events: ReturnType<typeof recorder>) {
  await agones.start(spawn, events.listener);
  const name = onlyGameServer();
  fake.setState(name, 'Ready', { address: '10.0.0.5', port: 7302 });
  await vi.waitFor(() => expect(events.ready).toHaveLength(1));
  return name;
}

async function expectAppError(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe(code);
}

describe('agones spawner, create mode', () => {
  it('creates a GameServer from the template, labelled with the server and world, its args appended', async () => {
    const spawn = request();
    await spawner().start(spawn, recorder().listener);

    const [posted] = fake.requestsTo('POST', 'gameservers');
    expect(posted?.path).toBe('/apis/agones.dev/v1/namespaces/default/gameservers');
    expect(posted?.authorization).toMatch(/^Bearer /);
    const body = posted?.body as GameServerTemplate & { metadata: Record<string, unknown> };
    expect(body).toMatchObject({
      apiVersion: 'agones.dev/v1',
      kind: 'GameServer',
      metadata: { generateName: 'atrium-' },
    });
    expect(body.metadata.labels).toEqual({ app: 'atrium-gameserver', ...ids(spawn) });
    const [sidecar, game] = body.spec.template.spec.containers;
    expect(sidecar?.args).toBeUndefined();
    // After the template's own, and no --port: Agones picks it, and the server learns it from the SDK.
    const appended = [
      '--api-url',
      spawn.apiUrl,
      '--server-token',
      TOKEN,
      '--world-id',
      spawn.worldId,
      '--ws-url',
      spawn.wsUrl,
    ];
    expect(game?.args).toEqual(['--verbose', ...appended]);
    expect(body.spec.ports).toEqual(template.spec.ports);
    // The template itself is left as it was for the next spawn.
    expect(GAME.args).toEqual(['--verbose']);
  });

  it('reports ready only once the state says Ready, never on Scheduled or RequestReady with a port', async () => {
    const events = recorder();
    const spawn = request();
    await spawner().start(spawn, events.listener);
    const name = onlyGameServer();
    expect(fake.gameServers.get(name)?.status.state).toBe('PortAllocation');

    fake.setState(name, 'Scheduled', { address: '10.0.0.5', port: 7300 });
    await polls(3);
    fake.setState(name, 'RequestReady');
    await polls(3);
    expect(events.ready).toEqual([]);

    fake.setState(name, 'Ready');
    const ready = { serverId: spawn.serverId, address: '10.0.0.5:7300' };
    await vi.waitFor(() => expect(events.ready).toEqual([ready]));
    await polls(3);
    expect(events.ready).toHaveLength(1);
    expect(events.ended).toEqual([]);
  });

  it('follows a GameServer through Agones startup states to Ready on its own', async () => {
    fake.autoReady(90);
    const events = recorder();
    const spawn = request();
    await spawner().start(spawn, events.listener);
    await vi.waitFor(() => expect(events.ready).toHaveLength(1));
    const { state, address, ports } = fake.gameServers.get(onlyGameServer())?.status ?? {};
    expect(state).toBe('Ready');
    expect(events.ready[0]?.address).toBe(`${address}:${ports?.[0]?.port}`);
  });

  it('never writes the server token to the log, through start, readiness, failure and stop', async () => {
    const events = recorder();
    const agones = spawner();
    const spawn = request();
    await startReady(agones, spawn, events);
    await agones.stop(spawn.serverId);
    // Kubernetes validation messages can quote the posted args; the log must not repeat them.
    const message = `args: Invalid value: "${TOKEN}"`;
    fake.fail({ method: 'POST', resource: 'gameservers', code: 500, message });
    await expectAppError(agones.start(request(), events.listener), UNAVAILABLE);

    expect(logged.length).toBeGreaterThan(0);
    expect(JSON.stringify(logged)).not.toContain(TOKEN);
    const error = logged.find((l) => l.level === 'error');
    expect(error?.obj).toMatchObject({ status: 500, reason: 'InternalError' });
  });

  it.each([
    { change: 'turns Unhealthy', state: 'Unhealthy', failed: true, reason: /Unhealthy/ },
    { change: 'goes to Error', state: 'Error', failed: true, reason: /Error/ },
    { change: 'is deleted behind its back', state: undefined, failed: true, reason: /deleted/ },
    { change: 'shuts down by itself', state: 'Shutdown', failed: false, reason: /shut down/ },
  ])('reports a GameServer that $change as an end with failed=$failed', async ({ state, failed, reason }) => {
    const events = recorder();
    const spawn = request();
    const agones = spawner();
    const name = await startReady(agones, spawn, events);
    if (state) fake.setState(name, state);
    else fake.remove(name);
    await vi.waitFor(() => expect(events.ended).toHaveLength(1));
    expect(events.ended[0]).toMatchObject({ serverId: spawn.serverId, failed });
    expect(events.ended[0]?.reason).toMatch(reason);
    expect(agones.running).toBe(0);
    // A failed GameServer is deleted: nothing brings it back, and it holds a node port.
    if (failed) await vi.waitFor(() => expect(fake.gameServers.has(name)).toBe(false));
  });

  it('reports a GameServer failing before it was ever ready as a failed end, and never as ready', async () => {
    const events = recorder();
    await spawner().start(request(), events.listener);
    fake.setState(onlyGameServer(), 'Unhealthy', { address: '10.0.0.5', port: 7303 });
    await vi.waitFor(() => expect(events.ended).toMatchObject([{ failed: true }]));
    expect(events.ready).toEqual([]);
  });

  it('keeps waiting through a passing Kubernetes error while it polls', async () => {
    const events = recorder();
    await spawner().start(request(), events.listener);
    fake.fail({ method: 'GET', resource: 'gameservers', code: 503, times: 2 });
    await polls(3);
    fake.setState(onlyGameServer(), 'Ready', { address: '10.0.0.5', port: 7304 });
    await vi.waitFor(() => expect(events.ready).toHaveLength(1));
    expect(events.ended).toEqual([]);
  });

  it('stops a server by deleting its GameServer, and reports no end for it', async () => {
    const events = recorder();
    const spawn = request();
    const agones = spawner();
    await agones.start(spawn, events.listener);
    const name = onlyGameServer();
    await agones.stop(spawn.serverId);
    expect(fake.requestsTo('DELETE', 'gameservers').map((r) => r.path)).toEqual([
      `/apis/agones.dev/v1/namespaces/default/gameservers/${name}`,
    ]);
    expect(fake.gameServers.size).toBe(0);
    expect(agones.running).toBe(0);
    const before = reads();
    await new Promise((resolve) => setTimeout(resolve, POLL_MS * 5));
    expect(reads()).toBe(before);
    expect(events.ended).toEqual([]);
    // Stopping twice, or a server it never ran, is a no-op.
    await agones.stop(spawn.serverId);
    await agones.stop('0190c0de-0000-7000-8000-ffffffffffff');
  });

  it('deletes a GameServer whose stop arrived while it was being created', async () => {
    fake.latencyMs = 100;
    const events = recorder();
    const spawn = request();
    const agones = spawner();
    const starting = agones.start(spawn, events.listener);
    await vi.waitFor(() => expect(fake.requestsTo('POST', 'gameservers')).toHaveLength(1));
    expect(agones.runningIds()).toEqual([spawn.serverId]);
    await agones.stop(spawn.serverId);
    await starting;
    expect(fake.requestsTo('DELETE', 'gameservers')).toHaveLength(1);
    expect(fake.gameServers.size).toBe(0);
    expect(agones.running).toBe(0);
    expect(events.ended).toEqual([]);
  });

  it('treats a GameServer already gone as stopped', async () => {
    const spawn = request();
    // No poll in between: the stop, not the poll, finds the GameServer gone.
    const agones = spawner({ pollIntervalMs: 60_000 });
    await agones.start(spawn, recorder().listener);
    fake.remove(onlyGameServer());
    await expect(agones.stop(spawn.serverId)).resolves.toBeUndefined();
    expect(logged.filter((l) => l.level !== 'info')).toEqual([]);
  });

  it('rejects with GAMESERVER_UNAVAILABLE when Kubernetes refuses, cannot be reached or does not answer', async () => {
    const agones = spawner();
    for (const code of [500, 403]) {
      fake.fail({ method: 'POST', resource: 'gameservers', code });
      await expectAppError(agones.start(request(), recorder().listener), UNAVAILABLE);
    }
    fake.fail({ method: 'POST', resource: 'gameservers', code: 'hang' });
    await expectAppError(
      spawner({ requestTimeoutMs: 150 }).start(request(), recorder().listener),
      UNAVAILABLE,
    );
    const unreachable = await FakeKubernetes.start();
    const kubeConfig = unreachable.kubeConfig();
    await unreachable.close();
    await expectAppError(spawner({ kubeConfig }).start(request(), recorder().listener), UNAVAILABLE);
    expect(agones.running).toBe(0);
    expect(fake.gameServers.size).toBe(0);
  });

  it('deletes every GameServer it runs on close', async () => {
    const agones = spawner();
    const events = recorder();
    const spawns = [request(), request(), request()];
    for (const spawn of spawns) await agones.start(spawn, events.listener);
    expect(agones.runningIds().sort()).toEqual(spawns.map((s) => s.serverId).sort());
    expect(fake.gameServers.size).toBe(3);
    await agones.close();
    expect(agones.runningIds()).toEqual([]);
    expect(fake.gameServers.size).toBe(0);
    expect(events.ended).toEqual([]);
  });

  it('refuses to be built without a usable template', () => {
    const log = { info() {}, warn() {}, error() {} };
    const base = { kubeConfig: fake.kubeConfig(), namespace: 'default', mode: 'create' as const, log };
    expect(() => new AgonesSpawner(base)).toThrow(StartupError);
    expect(() => new AgonesSpawner({ ...base, template, container: 'missing' })).toThrow(/named missing/);
    const empty = { spec: { template: { spec: { containers: [] } } } };
    expect(() => new AgonesSpawner({ ...base, template: empty })).toThrow(StartupError);
    expect(() => new AgonesSpawner({ ...base, mode: 'allocate' })).toThrow(/Fleet/);
  });
});

describe('agones spawner, allocate mode', () => {
  const allocating = () => spawner({ mode: 'allocate', fleet: 'atrium-gameservers', template: undefined });

  it('allocates from the Fleet, carrying server and world as labels and the token and API URL as annotations', async () => {
    const [gameServer] = fake.addFleet('atrium-gameservers', 2);
    fake.addFleet('other-fleet', 1);
    const spawn = request();
    await allocating().start(spawn, recorder().listener);

    const [posted] = fake.requestsTo('POST', 'gameserverallocations');
    expect(posted?.path).toBe('/apis/allocation.agones.dev/v1/namespaces/default/gameserverallocations');
    expect(posted?.body).toEqual({
      apiVersion: 'allocation.agones.dev/v1',
      kind: 'GameServerAllocation',
      spec: {
        selectors: [{ matchLabels: { 'agones.dev/fleet': 'atrium-gameservers' } }],
        metadata: {
          labels: ids(spawn),
          annotations: {
            ...ids(spawn),
            'atrium.dev/server-token': TOKEN,
            'atrium.dev/api-url': spawn.apiUrl,
            'atrium.dev/ws-url': spawn.wsUrl,
          },
        },
      },
    });
    // What the game server reads from its own GameServer through the SDK.
    const allocated = fake.gameServers.get(gameServer?.metadata.name as string);
    expect(allocated?.status.state).toBe('Allocated');
    expect(allocated?.metadata.annotations['atrium.dev/server-token']).toBe(TOKEN);
    expect(JSON.stringify(logged)).not.toContain(TOKEN);
  });

  it('reports the allocated GameServer ready at the address Agones answered, and its turning Unhealthy', async () => {
    const [gameServer] = fake.addFleet('atrium-gameservers', 1);
    const { address, ports } = gameServer?.status ?? { address: '', ports: [] };
    const events = recorder();
    const spawn = request();
    await allocating().start(spawn, events.listener);
    await vi.waitFor(() =>
      expect(events.ready).toEqual([{ serverId: spawn.serverId, address: `${address}:${ports[0]?.port}` }]),
    );
    fake.setState(gameServer?.metadata.name as string, 'Unhealthy');
    await vi.waitFor(() => expect(events.ended).toMatchObject([{ serverId: spawn.serverId, failed: true }]));
  });

  it('rejects with GAMESERVER_CAPACITY when Agones has no Ready GameServer to allocate', async () => {
    fake.addFleet('atrium-gameservers', 1);
    const agones = allocating();
    await agones.start(request(), recorder().listener);
    await expectAppError(agones.start(request(), recorder().listener), CAPACITY);
    // Agones' processor allocator says the same with 429 (none) or 409 (contention).
    for (const code of [429, 409]) {
      fake.fail({ method: 'POST', resource: 'gameserverallocations', code });
      await expectAppError(agones.start(request(), recorder().listener), CAPACITY);
    }
    expect(agones.running).toBe(1);
  });

  it('rejects with GAMESERVER_UNAVAILABLE when Kubernetes refuses the allocation', async () => {
    fake.addFleet('atrium-gameservers', 1);
    fake.fail({ method: 'POST', resource: 'gameserverallocations', code: 403 });
    await expectAppError(allocating().start(request(), recorder().listener), UNAVAILABLE);
  });

  it('stops an allocated server by deleting its GameServer (the Fleet replaces it)', async () => {
    const [gameServer] = fake.addFleet('atrium-gameservers', 1);
    const events = recorder();
    const spawn = request();
    const agones = allocating();
    await agones.start(spawn, events.listener);
    await agones.stop(spawn.serverId);
    expect(fake.gameServers.has(gameServer?.metadata.name as string)).toBe(false);
    expect(events.ended).toEqual([]);
  });
});
