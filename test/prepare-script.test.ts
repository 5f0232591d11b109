import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);

/** A cluster module that records, in the checkout's made.txt, which copy of it made the cache. */
const clusterModule = (made: string, depth: number) => `import { appendFileSync } from 'node:fs';
export async function clusterTarball() { appendFileSync(new URL('${'../'.repeat(depth)}made.txt', import.meta.url), '${made}\\n'); }
export async function clusterCacheFile() { return 'cache.tar.gz'; }
`;

/**
 * scripts/prepare.mjs (npm install's prepare step) in a copy of the checkout's shape whose
 * `npm run build` is a script writing dist/ (or failing), and whose cluster module records which
 * copy, the sources' or the build's, made the cache.
 */
describe('npm install prepare step', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'atrium-prepare-'));
    for (const dir of ['scripts', 'src/platform', 'protocol', 'migrations'])
      await mkdir(join(root, dir), { recursive: true });
    for (const script of ['prepare.mjs', 'build-freshness.mjs'])
      await copyFile(join('scripts', script), join(root, 'scripts', script));
    await symlink(join(process.cwd(), 'node_modules'), join(root, 'node_modules'));
    await writeFile(join(root, 'src', 'platform', 'embedded-cluster.ts'), clusterModule('sources', 2));
    await writeFile(
      join(root, 'build.mjs'),
      `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
if (process.env.BUILD_FAILS) process.exit(1);
appendFileSync('made.txt', 'built\\n');
mkdirSync('dist/src/platform', { recursive: true });
writeFileSync('dist/src/main.js', '');
writeFileSync('dist/src/platform/embedded-cluster.js', ${JSON.stringify(clusterModule('build', 3))});
`,
    );
    await writeFile(
      join(root, 'package.json'),
      JSON.stringify({ type: 'module', scripts: { build: 'node build.mjs' } }),
    );
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const prepare = async (env: Record<string, string> = {}) => {
    await run(process.execPath, [join(root, 'scripts', 'prepare.mjs')], {
      cwd: root,
      env: { ...process.env, ...env },
    });
    return (await readFile(join(root, 'made.txt'), 'utf8')).trim().split('\n');
  };

  it('builds dist/ when there is no build, then makes the cluster cache with the build', async () => {
    expect(await prepare()).toEqual(['built', 'build']);
  });

  it('does not build again when the build is as new as every source file', async () => {
    await prepare();
    const later = new Date(Date.now() + 60_000);
    await utimes(join(root, 'dist', 'src', 'main.js'), later, later);
    expect(await prepare()).toEqual(['built', 'build', 'build']);
  });

  it('finishes the install when the build fails, making the cluster cache with the sources', async () => {
    expect(await prepare({ BUILD_FAILS: '1' })).toEqual(['sources']);
  });
});
