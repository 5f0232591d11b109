import { parseArgs } from 'node:util';
import { startVitest } from 'vitest/node';

/**
 * `npm run fuzz`: the long run of the same fuzz files `npm test` runs briefly, with FUZZ_CASES
 * cases per operation and frame type, a progress line per target and a summary per suite.
 *
 *   npm run fuzz -- [--cases 10000] [--seed N] [--only 'PUT /api/avatar'] [--case 123] [--suite rest|frames]
 *
 * The app runs inside the vitest worker, so the suite reuses the test helpers (a cloned
 * database per file, Postgres and Redis when DATABASE_URL / REDIS_URL are set) and the
 * memory it measures is the server's own process.
 */
const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    only: { type: 'string' },
    case: { type: 'string' },
    suite: { type: 'string' },
  },
});

process.env.FUZZ_CASES = values.cases;
if (values.seed !== undefined) process.env.FUZZ_SEED = values.seed;
if (values.only !== undefined) process.env.FUZZ_ONLY = values.only;
if (values.case !== undefined) process.env.FUZZ_CASE = values.case;
const files = values.suite ? [`test/fuzz/${values.suite}.fuzz.test.ts`] : ['test/fuzz/'];

// --expose-gc lets the memory bound be checked on live data rather than on garbage not yet collected.
await startVitest('test', files, {
  run: true,
  watch: false,
  reporters: ['verbose'],
  execArgv: ['--expose-gc'],
});
