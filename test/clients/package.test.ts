import { access, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  bundlePackage,
  emitDeclarations,
  importsOf,
  type PackageJson,
  packageDir,
  readPackageJson,
} from '../../packages/client/build-package.js';
import { PASSWORD, uniqueUsername } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';

type ClientPackage = typeof import('../../protocol/index.js');
type Exports = Record<string, { types: string; import: string }>;

const repoRoot = resolve(packageDir, '../..');
const app = useTestApp();

describe('the @atrium/client package', () => {
  let outDir: string;
  let metafile: Metafile;
  let pkg: PackageJson & { exports: Exports };
  let root: PackageJson;

  beforeAll(async () => {
    // Inside the repository, so that the bundle's bare imports (zod, @msgpack/msgpack) resolve
    // from its node_modules as they would from an installer's.
    const cache = join(repoRoot, 'node_modules/.cache/atrium');
    await mkdir(cache, { recursive: true });
    outDir = await mkdtemp(join(cache, 'client-package-'));
    metafile = await bundlePackage(outDir);
    await emitDeclarations(outDir);
    pkg = (await readPackageJson()) as PackageJson & { exports: Exports };
    root = await readPackageJson(repoRoot);
  });

  afterAll(async () => {
    await rm(outDir, { recursive: true, force: true });
  });

  it('has the version of the service it is built from', () => {
    expect(pkg.version).toBe(root.version);
  });

  it('depends on zod and @msgpack/msgpack with the ranges the service uses', () => {
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['@msgpack/msgpack', 'zod']);
    for (const [name, range] of Object.entries(pkg.dependencies)) expect(range).toBe(root.dependencies[name]);
  });

  it('imports nothing at run time but its dependencies, so no Node builtin', async () => {
    expect(importsOf(metafile)).toEqual(['@msgpack/msgpack', 'zod']);
    const code = await readFile(join(outDir, 'index.js'), 'utf8');
    expect(code).not.toMatch(/from\s*["']node:|require\(/);
  });

  it('builds a module and its declarations for every export', async () => {
    for (const [subpath, { types, import: module }] of Object.entries(pkg.exports)) {
      for (const file of [types, module]) {
        const built = join(outDir, file.replace(/^\.\/dist\//, ''));
        await expect(access(built), `${subpath}: ${file}`).resolves.toBeUndefined();
      }
    }
  });

  it('registers two users who exchange a direct message on Node 20 with ws', async () => {
    const { AtriumClient } = (await import(pathToFileURL(join(outDir, 'index.js')).href)) as ClientPackage;
    const options = { httpUrl: app().httpUrl, wsUrl: app().wsUrl, WebSocket };
    const alice = new AtriumClient(options);
    const bob = new AtriumClient(options);
    try {
      const register = (client: typeof alice) =>
        client.call('auth.register', {
          username: uniqueUsername('pkg'),
          password: PASSWORD,
          accept_terms: true,
          confirm_18_plus: true,
        });
      const [aliceTokens, bobTokens] = await Promise.all([register(alice), register(bob)]);
      alice.setAccessToken(aliceTokens.access_token);
      bob.setAccessToken(bobTokens.access_token);
      await Promise.all([alice.ready(), bob.ready()]);

      const received = new Promise<{ sender_id: string | null; body: string }>((resolve) =>
        bob.on('dm.message', resolve),
      );
      const sent = await alice.call('dm.send', {
        user_id: bobTokens.user.id,
        body: 'hello from the package',
      });
      expect(sent.body).toBe('hello from the package');
      await expect(received).resolves.toMatchObject({
        sender_id: aliceTokens.user.id,
        body: 'hello from the package',
      });
    } finally {
      alice.close();
      bob.close();
    }
  });
});
