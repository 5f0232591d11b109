import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { compiledBuild } from './build-freshness.mjs';

/**
 * `npm start`: the compiled build (`npm run build`) when there is one at least as new as every
 * source file, so a server process carries no TypeScript compiler; otherwise the sources through
 * tsx, saying why when a build is there but stale. Extensions written in TypeScript (EXTENSIONS
 * naming a .ts file) load through tsx either way. Runs in this process, not a child: the node
 * flags of the script (the young generation's size) apply to the service, and worker mode's
 * workers run this file again and decide alike.
 */
const root = join(import.meta.dirname, '..');
const { entry: built, exists, fresh: useBuild } = compiledBuild(root);
if (exists && !useBuild && process.env.NODE_UNIQUE_ID === undefined) {
  console.error('dist/ is older than the sources: running the sources (`npm run build` to run the build)');
}
const typescriptExtensions = (process.env.EXTENSIONS ?? '')
  .split(',')
  .some((path) => /\.[cm]?ts$/.test(path.trim()));
if (!useBuild || typescriptExtensions) (await import('tsx/esm/api')).register();
await import(pathToFileURL(useBuild ? built : join(root, 'src', 'main.ts')).href);
