import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type FakeGameServer, FakeKubernetes } from './fake-kubernetes.js';

/**
 * A FakeKubernetes for a test file's apps, started before them and found through KUBECONFIG, as
 * the module finds a real cluster's API; `gameServerOf` is the GameServer of one of our servers.
 */
export function useFakeKubernetes() {
  let fake: FakeKubernetes | undefined;
  beforeAll(async () => {
    fake = await FakeKubernetes.start();
    const file = join(
      tmpdir(),
      `atrium-kubeconfig-${process.pid}-${Math.random().toString(36).slice(2)}.json`,
    );
    writeFileSync(file, fake.kubeConfig().exportConfig());
    process.env.KUBECONFIG = file;
  });
  afterAll(() => {
    delete process.env.KUBECONFIG;
    return fake?.close();
  });
  const kubernetes = () => {
    if (!fake) throw new Error('The fake Kubernetes API starts in beforeAll.');
    return fake;
  };
  const gameServerOf = (serverId: string): FakeGameServer | undefined =>
    [...kubernetes().gameServers.values()].find(
      (gs) => gs.metadata.labels['atrium.dev/server-id'] === serverId,
    );
  return { kubernetes, gameServerOf };
}
