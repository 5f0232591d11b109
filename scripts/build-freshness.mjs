import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Whether the compiled build (`npm run build`'s dist/src/main.js) is there and at least as new as
 * every source file: `npm start` runs it then, and `npm install`'s prepare step builds when not.
 */
export function compiledBuild(root) {
  const entry = join(root, 'dist', 'src', 'main.js');
  const builtAt = mtimeOf(entry);
  const sourcesAt = Math.max(...['src', 'protocol', 'migrations'].map((dir) => newestTs(join(root, dir))));
  return { entry, exists: builtAt !== undefined, fresh: builtAt !== undefined && builtAt >= sourcesAt };
}

function mtimeOf(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** The newest modification time of a source file (.ts, not a test) under `dir`; 0 when there is none. */
function newestTs(dir) {
  let newest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true, recursive: true });
  } catch {
    return newest;
  }
  for (const entry of entries) {
    if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}
