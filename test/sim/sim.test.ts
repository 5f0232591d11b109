import { describe, expect, it } from 'vitest';
import { PROCESS_TEST_TIMEOUT_MS } from '../helpers/service-process.js';
import { simulate } from './simulate.js';

/**
 * One short seed of `npm run sim` (docs/economy.md, "Seeded simulation"), so that `npm test`
 * against PostgreSQL keeps the tool working; the long runs are the tool's. The simulation needs
 * a PostgreSQL server to make its database on, so the embedded pass skips it.
 */
describe.skipIf(!process.env.DATABASE_URL)('the seeded economy simulation', () => {
  it(
    'holds every invariant through 20 steps of seed 1, a database cut and a kill -9 among them',
    async () => {
      const result = await simulate({
        seed: 1,
        steps: 20,
        faults: true,
        faultRate: 0.05,
        fullEvery: 250,
        verifyEvery: 2000,
        progressEvery: 0,
        verbose: false,
        keepDatabase: false,
        serverUrl: process.env.DATABASE_URL as string,
        log: () => {},
      });
      expect(result.failure).toBeUndefined();
      expect(result.steps).toBe(20);
      expect(result.faults).toEqual({ kills: 1, cuts: 1 });
      expect(result.verifies).toBe(1);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
