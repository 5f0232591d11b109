import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * `npm install`'s and `npm ci`'s `prepare` step for this package: makes the embedded database's
 * cluster cache (src/platform/embedded-cluster.ts) so that the first `npm start` on a new machine
 * unpacks a migrated cluster instead of running initdb and the migrations (several seconds). It never fails the install: without
 * the cache, the first start makes it. An install without the sources (the Dockerfile's dependency
 * layer) has nothing to prepare.
 */
const root = join(import.meta.dirname, '..');
const built = join(root, 'dist', 'src', 'platform', 'embedded-cluster.js');
const source = join(root, 'src', 'platform', 'embedded-cluster.ts');

try {
  // The sources when there are (a build may be stale), else the build (an install of dist/ alone).
  let module = existsSync(built) ? built : undefined;
  if (existsSync(source)) {
    (await import('tsx/esm/api')).register();
    module = source;
  }
  if (module) {
    const started = performance.now();
    const { clusterCacheFile, clusterTarball } = await import(pathToFileURL(module).href);
    // The migrated cluster is made from the empty one, so this makes both.
    await clusterTarball({ stage: 'migrated' });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `embedded database cluster cache ready in ${seconds} s: ${await clusterCacheFile(undefined, 'migrated')}`,
    );
  }
} catch (error) {
  console.warn(`The embedded database's cluster cache was not made (the first start will make it): ${error}`);
}
