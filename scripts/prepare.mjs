import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compiledBuild } from './build-freshness.mjs';

/**
 * `npm install`'s and `npm ci`'s `prepare` step for this package, in a checkout with its sources:
 * - builds dist/ (`npm run build`) unless it is already as new as the sources, so `npm start`
 *   runs compiled JavaScript: a service process without tsx's loader thread and its compiler
 *   holds about 30 MiB less (docs/performance.md, "Process memory and start time");
 * - makes the embedded database's cluster cache (src/platform/embedded-cluster.ts), so that the
 *   first `npm start` on a new machine unpacks a migrated cluster instead of running initdb and
 *   the migrations (several seconds).
 * It never fails the install: without a build `npm start` runs the sources, and without the cache
 * the first start makes it. An install without the sources (the Dockerfile's dependency layer)
 * has nothing to prepare.
 */
const root = join(import.meta.dirname, '..');
const source = join(root, 'src', 'platform', 'embedded-cluster.ts');
const built = join(root, 'dist', 'src', 'platform', 'embedded-cluster.js');

if (existsSync(source)) buildUnlessFresh();
await makeClusterCache();

function buildUnlessFresh() {
  if (compiledBuild(root).fresh) return;
  const started = performance.now();
  console.log('building dist/ so that npm start runs compiled JavaScript (npm run build)...');
  try {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
    console.log(`built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    console.warn(`The build failed (npm start will run the sources through tsx): ${error.message}`);
  }
}

async function makeClusterCache() {
  try {
    // The build when it is as new as the sources, else the sources; the build alone in an install of dist/.
    let module;
    if (existsSync(source) && !compiledBuild(root).fresh) {
      (await import('tsx/esm/api')).register();
      module = source;
    } else if (existsSync(built)) module = built;
    if (!module) return;
    const started = performance.now();
    const { clusterCacheFile, clusterTarball } = await import(pathToFileURL(module).href);
    // The migrated cluster is made from the empty one, so this makes both.
    await clusterTarball({ stage: 'migrated' });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `embedded database cluster cache ready in ${seconds} s: ${await clusterCacheFile(undefined, 'migrated')}`,
    );
  } catch (error) {
    console.warn(
      `The embedded database's cluster cache was not made (the first start will make it): ${error}`,
    );
  }
}
