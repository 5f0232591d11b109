import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { LongFilesFirst } from './test/helpers/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'protocol/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file shares one database clone; files run in parallel. One more worker than cores:
    // files spend much of their time waiting (TTLs lapsing, timers, other processes), and on this
    // 2-core machine three workers took the suite from 6.5 to 4.8 minutes (four: 4.5).
    fileParallelism: true,
    maxWorkers: availableParallelism() + 1,
    // A worker runs its files one after another in one module graph: the service's modules, the
    // ORM, Fastify and PGlite are loaded once per worker instead of once per file. Files share no
    // state through it: each builds and closes its own app, on a database clone that is fresh or,
    // embedded, the previous file's reset to the template (test/helpers/embedded-reuse.ts).
    isolate: false,
    sequence: { sequencer: LongFilesFirst },
  },
});
