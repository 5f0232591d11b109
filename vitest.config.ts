import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { LongFilesFirst } from './test/helpers/sequencer.js';
import { isProcessTest, testFilesUnder } from './test/helpers/test-tiers.js';

/**
 * Which files run, by `--mode` (docs/architecture.md, "Tests"): `in-process` (what `npm test`
 * runs) leaves out the process tier, the files that start the service, the CLI, a browser or a
 * compiler or fuzz every operation; `process` runs only those; no mode runs every file, so
 * `npx vitest run <file>` finds any file and CI runs the whole suite.
 */
function tierSelection(mode: string) {
  const include = ['test/**/*.test.ts', 'protocol/**/*.test.ts'];
  if (mode !== 'in-process' && mode !== 'process') return { include };
  const processTier = testFilesUnder(['test', 'protocol']).filter((file) => isProcessTest(file));
  return mode === 'process'
    ? { include: processTier }
    : { include, exclude: [...configDefaults.exclude, ...processTier] };
}

export default defineConfig(({ mode }) => ({
  test: {
    ...tierSelection(mode),
    globalSetup: ['test/helpers/global-setup.ts'],
    // A failed test prints what the open test apps logged at warn (test/helpers/app-warnings.ts).
    setupFiles: ['test/helpers/failure-warnings.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file shares one database clone; files run in parallel. One more worker than cores:
    // files spend much of their time waiting (TTLs lapsing, timers, other processes), and on this
    // 2-core machine three workers took the suite from 6.5 to 4.8 minutes (four: 4.5).
    fileParallelism: true,
    maxWorkers: availableParallelism() + 1,
    // A larger young generation: the suite allocates fast (apps, PGlite results, fuzz cases), and
    // 32 MB semi-spaces took npm test's CPU from about 484 to 466 s (docs/architecture.md, "Test time").
    execArgv: ['--max-semi-space-size=32'],
    // A worker runs its files one after another in one module graph: the service's modules, the
    // ORM, Fastify and PGlite are loaded once per worker instead of once per file. Files share no
    // state through it: each builds and closes its own app, on a database clone that is fresh or,
    // embedded, the previous file's reset to the template (test/helpers/embedded-reuse.ts).
    isolate: false,
    sequence: { sequencer: LongFilesFirst },
    // Transformed modules kept under node_modules between runs, keyed by each file's content: a run
    // after the first transforms only what changed. Three files took 11.7 s instead of 13.5 to
    // 15.8 (import 7.5 s instead of 12 to 16) and 3 s less CPU (docs/architecture.md, "Test time").
    experimental: { fsModuleCache: true },
  },
}));
