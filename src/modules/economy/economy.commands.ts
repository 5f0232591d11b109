import { z } from 'zod';
import { command } from '../../platform/module.js';
import { verifyLedger } from './verify.js';

/**
 * `atrium economy verify`: every stored balance against the sum of its entries, in one snapshot
 * (docs/economy.md, "Verify and reconcile"); a line per difference, and exit code 1 when any.
 */
export const economyCommands = [
  command('economy.verify', {
    args: z.object({}).strict(),
    run: async ({ data }) => {
      const differences = await verifyLedger(data);
      const stdout = differences.map((difference) => JSON.stringify(difference));
      if (differences.length === 0) {
        stdout.push('ledger verified: every balance equals the sum of its entries');
        return { exitCode: 0, stdout, stderr: [] };
      }
      return { exitCode: 1, stdout, stderr: [`ledger differences: ${differences.length}`] };
    },
  }),
];
