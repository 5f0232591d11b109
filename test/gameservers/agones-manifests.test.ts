import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import {
  AGONES_METADATA,
  AgonesSpawner,
  KUBERNETES_PERMISSIONS,
  parseGameServerTemplate,
} from '../../src/modules/gameservers/agones-spawner.js';

/**
 * The manifests under deploy/agones/ have the shapes Agones and Kubernetes expect, agree with each
 * other (the allocation selects the Fleet, the RoleBinding binds the Role), and grant exactly the
 * calls agones-spawner.ts makes.
 */

// biome-ignore lint/suspicious/noExplicitAny: parsed YAML, checked field by field.
type Doc = any;

const read = (file: string) => readFileSync(new URL(`../../deploy/agones/${file}`, import.meta.url), 'utf8');
const one = (file: string): Doc => parse(read(file));
const all = (file: string): Doc[] => parseAllDocuments(read(file)).map((d) => d.toJS());

function expectGameServerSpec(spec: Doc): void {
  const containers: Doc[] = spec.template.spec.containers;
  expect(containers.length).toBeGreaterThan(0);
  const game = containers.find((c) => c.name === (spec.container ?? containers[0].name));
  expect(game?.image).toMatch(/^atrium\/gameserver-example(:|$)/);
  // Agones assigns the port: the spawner never passes one, and a server never picks its own.
  expect(spec.ports).toContainEqual(expect.objectContaining({ portPolicy: 'Dynamic', containerPort: 7777 }));
  expect(game?.args ?? []).not.toContain('--port');
  expect(spec.health?.disabled).not.toBe(true);
  expect(spec.health.periodSeconds).toBeGreaterThan(0);
}

describe('Agones manifests', () => {
  it('describe a Fleet of the reference game server with a Dynamic port and health checks', () => {
    const fleet = one('fleet.yaml');
    expect(fleet).toMatchObject({
      apiVersion: 'agones.dev/v1',
      kind: 'Fleet',
      metadata: { name: expect.any(String) },
    });
    expect(fleet.spec.replicas).toBeGreaterThan(0);
    expectGameServerSpec(fleet.spec.template.spec);
    // A Fleet server starts before any spawn: it must not carry a token of its own.
    expect(JSON.stringify(fleet)).not.toContain('--server-token');
  });

  it('ship a GameServer template the create mode accepts, without the arguments it appends', () => {
    const text = read('gameserver-template.yaml');
    const template = parseGameServerTemplate(text);
    expect(template).toMatchObject({ apiVersion: 'agones.dev/v1', kind: 'GameServer' });
    expect(template.metadata?.name).toBeUndefined();
    expectGameServerSpec(template.spec);
    const args = template.spec.template.spec.containers.flatMap((c) => c.args ?? []);
    for (const flag of ['--api-url', '--server-token', '--world-id']) expect(args).not.toContain(flag);

    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: 'http://127.0.0.1:1' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const log = { info() {}, warn() {}, error() {} };
    expect(
      () => new AgonesSpawner({ kubeConfig, namespace: 'default', mode: 'create', template, log }),
    ).not.toThrow();
  });

  it('show an allocation that selects the Fleet and carries the annotations a server reads', () => {
    const allocation = one('gameserverallocation.yaml');
    expect(allocation).toMatchObject({
      apiVersion: 'allocation.agones.dev/v1',
      kind: 'GameServerAllocation',
    });
    expect(allocation.spec.selectors).toEqual([
      { matchLabels: { [AGONES_METADATA.fleet]: one('fleet.yaml').metadata.name } },
    ]);
    expect(Object.keys(allocation.spec.metadata.labels).sort()).toEqual(
      [AGONES_METADATA.serverId, AGONES_METADATA.worldId].sort(),
    );
    expect(Object.keys(allocation.spec.metadata.annotations).sort()).toEqual(
      [
        AGONES_METADATA.serverId,
        AGONES_METADATA.worldId,
        AGONES_METADATA.token,
        AGONES_METADATA.apiUrl,
        AGONES_METADATA.wsUrl,
      ].sort(),
    );
  });

  it('grant the service account exactly the Kubernetes calls the spawner makes', () => {
    const docs = all('rbac.yaml');
    const byKind = (kind: string) => docs.filter((d) => d.kind === kind);
    const [account] = byKind('ServiceAccount');
    const [role] = byKind('Role');
    const [binding] = byKind('RoleBinding');
    expect(docs).toHaveLength(3);
    expect(account).toMatchObject({ apiVersion: 'v1', metadata: { name: 'atrium' } });
    expect(role.apiVersion).toBe('rbac.authorization.k8s.io/v1');
    expect(binding.apiVersion).toBe('rbac.authorization.k8s.io/v1');

    const granted = role.rules.flatMap((rule: Doc) =>
      rule.apiGroups.flatMap((group: string) =>
        rule.resources.flatMap((resource: string) =>
          rule.verbs.map((verb: string) => `${group}/${resource}:${verb}`),
        ),
      ),
    );
    const called = Object.entries(KUBERNETES_PERMISSIONS).flatMap(([resource, { group, verbs }]) =>
      verbs.map((verb) => `${group}/${resource}:${verb}`),
    );
    expect(granted.sort()).toEqual(called.sort());

    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: account.metadata.name, namespace: account.metadata.namespace },
    ]);
    expect(binding.metadata.namespace).toBe(role.metadata.namespace);
  });
});
