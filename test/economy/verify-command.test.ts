import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { openDatabase } from '../../src/platform/db.js';
import { migrateUp } from '../../src/platform/migrate.js';
import { queryRows } from '../helpers/database.js';
import { PROCESS_TEST_TIMEOUT_MS, preparedDataDir, runCli } from '../helpers/service-process.js';

/**
 * `atrium economy verify` as an operator runs it, on an embedded database of its own (the command
 * opens DATA_DIR's database, which one process holds at a time).
 */
describe('atrium economy verify', () => {
  const run = (dataDir: string, ...args: string[]) =>
    runCli(['economy', ...args], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' }, 60_000);

  it(
    'exits 0 on a clean ledger, and prints each difference and exits 1 when a balance is not its entries’ sum',
    async () => {
      const dataDir = await preparedDataDir('atrium-verify-');
      try {
        const clean = run(dataDir, 'verify');
        expect(clean.stderr).toBe('');
        expect(clean.status).toBe(0);
        expect(clean.stdout).toContain('ledger verified');
        // A balance changed behind the ledger's back (accounts are not append-only; entries are).
        const db = await openDatabase(configFrom({ DATA_DIR: dataDir }));
        try {
          await migrateUp(db, undefined);
          await queryRows(
            db,
            `update economy_accounts set balance = balance + 5 where kind = 'platform_revenue'`,
          );
        } finally {
          await db.close();
        }
        const dirty = run(dataDir, 'verify');
        expect(dirty.status).toBe(1);
        const lines = dirty.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line));
        expect(lines).toEqual([
          expect.objectContaining({ kind: 'balance', account: 'platform_revenue', stored: 5, entries: 0 }),
        ]);
        expect(dirty.stderr).toContain('ledger differences: 1');
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it('answers a usage mistake with exit code 2', () => {
    const usage = run(tmpdir(), 'verify', 'extra');
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('economy verify');
  });
});
