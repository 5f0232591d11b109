import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { scenarioOptions } from './backends.js';
import { measureExtensions } from './extensions/measure.js';
import { extensionsReport } from './extensions/report.js';
import { runPerBackend } from './scenario.js';
import { buildService } from './service.js';

/**
 * The cost of the extensions' hook path: CPU per call of GET /api/users/me and REST dm.send on
 * services without extensions, with an extension hooking other operations, with a no-op before
 * hook, and (--base DIR) the service of another checkout, e.g. the commit before extensions; the
 * echo rpc over REST and the socket beside GET me and ping. Usage: npm run bench -- extensions
 * [--backends embedded,postgres] [--seconds N] [--base DIR] [--profile DIR] [--compiled] (the
 * compiled build, as production runs it, for every service, --base's built too). DIR for --base is a
 * worktree with its node_modules (`git worktree add /tmp/base <commit> && (cd /tmp/base && npm ci)`).
 * Writes bench/results/extensions.md.
 */
export async function run(seconds: number): Promise<string> {
  const { values } = parseArgs({
    options: { base: { type: 'string' } },
    allowPositionals: true,
    strict: false,
  });
  const base = typeof values.base === 'string' ? resolve(values.base) : undefined;
  const checkout = base
    ? {
        dir: base,
        commit: execFileSync('git', ['-C', base, 'rev-parse', '--short', 'HEAD'], {
          encoding: 'utf8',
        }).trim(),
      }
    : undefined;
  // The other checkout's service runs as this one's does: compiled too with --compiled.
  if (checkout && scenarioOptions().compiled) await buildService(checkout.dir);
  return runPerBackend(
    'extensions',
    seconds,
    (backend, schedule, _seconds, nodeArgs) => measureExtensions(backend, schedule, checkout, nodeArgs),
    extensionsReport,
  );
}
