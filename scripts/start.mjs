import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * `npm start`: the compiled build (`npm run build`) when there is one at least as new as every
 * source file, so a server process carries no TypeScript compiler; otherwise the sources through
 * tsx, saying why when a build is there but stale. Extensions written in TypeScript (EXTENSIONS
 * naming a .ts file) load through tsx either way. Runs in this process, not a child: the node
 * flags of the script (the young generation's size) apply to the service, and worker mode's
 * workers run this file again and decide alike.
 */
const root = join(import.meta.dirname, '..');
const built = join(root, 'dist', 'src', 'main.js');

const builtAt = mtimeOf(built);
const sourcesAt = Math.max(...['src', 'protocol', 'migrations'].map((dir) => newestTs(join(root, dir))));
const useBuild = builtAt !== undefined && builtAt >= sourcesAt;
if (builtAt !== undefined && !useBuild && process.env.NODE_UNIQUE_ID === undefined) {
  console.error('dist/ is older than the sources: running the sources (`npm run build` to run the build)');
}
const typescriptExtensions = (process.env.EXTENSIONS ?? '')
  .split(',')
  .some((path) => /\.[cm]?ts$/.test(path.trim()));
if (!useBuild || typescriptExtensions) (await import('tsx/esm/api')).register();
await import(pathToFileURL(useBuild ? built : join(root, 'src', 'main.ts')).href);

function mtimeOf(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** The newest modification time of a source file (.ts, not a test) under `dir`. */
function newestTs(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}
