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

await makeClusterCache(existsSync(source) ? builtFromSources() : existsSync(built));

/** Builds dist/ unless it is as new as the sources; whether it is now. */
function builtFromSources() {
  if (compiledBuild(root).fresh) return true;
  const started = performance.now();
  console.log('building dist/ so that npm start runs compiled JavaScript (npm run build)...');
  try {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
    console.log(`built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return true;
  } catch (error) {
    console.warn(`The build failed (npm start will run the sources through tsx): ${error.message}`);
    return false;
  }
}

/** With the build when it is current (or all there is, in an install of dist/), else with the sources. */
async function makeClusterCache(useBuild) {
  try {
    let module;
    if (useBuild) module = built;
    else if (existsSync(source)) {
      (await import('tsx/esm/api')).register();
      module = source;
    }
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
