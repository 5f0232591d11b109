import { describe, expect, it, vi } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { gameServerCalls, serversOfWorlds } from './gameservers.js';
import { useFakeKubernetes } from './kubeconfig.js';

/**
 * The service with GAMESERVER_SPAWNER=agones, through the module as deployed: the client finds the
 * (fake) Kubernetes API through KUBECONFIG, as it would a real cluster's.
 */
const { kubernetes } = useFakeKubernetes();

describe('game servers on Agones (create mode)', () => {
  const app = useTestApp({
    GAMESERVER_SPAWNER: 'agones',
    GAMESERVER_AGONES_POLL_MS: 20,
    // Far past the fake's 100 ms to Ready: on a loaded machine the create, the polls and the
    // state change together took over 1.5 s once, and a server that should be ready failed.
    GAMESERVER_READY_TIMEOUT_MS: 5_000,
  });
  const { spawn, settled, expectStatus } = gameServerCalls(app);

  it('creates a GameServer with the launch arguments and is ready at its Agones address once the state says Ready', async () => {
    kubernetes().autoReady(100);
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const server = await settled(owner, (await spawn(owner, worldId)).server_id);
    const created = [...kubernetes().gameServers.values()].find(
      (gs) => gs.metadata.labels['atrium.dev/server-id'] === server.server_id,
    );
    expect(server).toMatchObject({
      status: 'ready',
      backend: 'agones',
      address: `${created?.status.address}:${created?.status.ports[0]?.port}`,
    });
    const args: string[] = created?.spec.template.spec.containers[0].args;
    expect(args.slice(-8)).toEqual([
      '--api-url',
      app().httpUrl,
      '--server-token',
      expect.stringMatching(/^gs_/),
      '--world-id',
      worldId,
      '--ws-url',
      app().wsUrl,
    ]);
    await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
    await vi.waitFor(() =>
      expect(kubernetes().gameServers.has(created?.metadata.name as string)).toBe(false),
    );
  });

  it('fails a GameServer that never gets Ready at the deadline and deletes it', async () => {
    kubernetes().autoReady(undefined);
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const started = await spawn(owner, worldId);
    const failed = await settled(owner, started.server_id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('did not report ready'),
    });
    const byLabel = () =>
      [...kubernetes().gameServers.values()].filter(
        (gs) => gs.metadata.labels['atrium.dev/server-id'] === started.server_id,
      );
    await vi.waitFor(() => expect(byLabel()).toEqual([]));
  });

  it('answers 503 GAMESERVER_UNAVAILABLE when the Kubernetes API refuses, recording the failure', async () => {
    kubernetes().fail({ method: 'POST', resource: 'gameservers', code: 500 });
    try {
      const owner = await registerUser(app());
      const { worldId } = await createWorld(app(), owner.access_token);
      const refused = await expectStatus(503, 'POST', `/api/worlds/${worldId}/servers`, owner);
      expect(refused.json()).toMatchObject({ code: 'GAMESERVER_UNAVAILABLE' });
    } finally {
      kubernetes().clearFailures();
    }
  });

  it('caps the live servers one user caused at GAMESERVER_MAX_LIVE_PER_USER, the capacity of a fleet being unknown here: one more is 409 QUOTA_EXCEEDED, recording nothing', async () => {
    kubernetes().autoReady(100);
    const owner = await registerUser(app());
    const worldIds: string[] = [];
    for (let i = 0; i < 4; i++) worldIds.push((await createWorld(app(), owner.access_token)).worldId);
    const servers = [];
    for (const worldId of worldIds.slice(0, 3)) servers.push(await spawn(owner, worldId));
    const refused = await expectStatus(409, 'POST', `/api/worlds/${worldIds[3]}/servers`, owner);
    expect(refused.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 3 });
    expect(new Set(await serversOfWorlds(app().db, worldIds))).toEqual(
      new Set(servers.map((server) => server.server_id)),
    );
    for (const server of servers)
      await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, owner);
  });
});
