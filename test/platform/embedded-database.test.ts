import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { configFrom } from '../../src/config.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import { wasmCompilerFlag } from '../../src/platform/embedded-postgres.js';
import { queryRows } from '../helpers/database.js';
import { preparedDataDir } from '../helpers/service-process.js';

/** Embedded mode regardless of DATABASE_URL: these tests are about PGlite under DATA_DIR. */
describe('embedded database', () => {
  let dataDir: string;
  const config = () => configFrom({ DATA_DIR: dataDir, HTTP_PORT: 0, WS_PORT: 0, LOG_LEVEL: 'silent' });

  beforeAll(async () => {
    dataDir = await preparedDataDir('atrium-embedded-');
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  // Two services on a fresh data directory: an initdb and every migration, then a restart. About
  // 7 s alone; on a loaded 2-core machine more than the default 30 s, so it has its own bound.
  it('keeps data across a stop and a start of the service', { timeout: 120_000 }, async () => {
    const first = await buildApp(config());
    expect(first.db.kind).toBe('embedded');
    await queryRows(
      first.db,
      `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
       values ('0190a000-0000-7000-8000-00000000abcd', 'persisted_user', 'x', now(), now())`,
    );
    await first.close();

    const second = await buildApp(config());
    try {
      const rows = await queryRows(second.db, 'select username from users');
      expect(rows).toEqual([{ username: 'persisted_user' }]);
    } finally {
      await second.close();
    }
  });

  it('runs with small shared buffers, as they stay resident once touched', async () => {
    const db = await openDatabase(config());
    try {
      const [row] = await executeBound<{ shared_buffers: string }>(db.data, 'show shared_buffers', []);
      expect(row?.shared_buffers).toBe('16MB');
    } finally {
      await db.close();
    }
  });

  it('keeps the database on the baseline compiler when the node has more than one platform thread', () => {
    expect(wasmCompilerFlag(['--max-semi-space-size=32'])).toBe('--liftoff-only');
    expect(wasmCompilerFlag(['--v8-pool-size=2'], '--v8-pool-size=4')).toBe('--liftoff-only');
  });

  it('lets the database tier up on one compilation task when the node has one platform thread', () => {
    const tiered = '--wasm-num-compilation-tasks=1';
    expect(wasmCompilerFlag(['--min-semi-space-size=1', '--v8-pool-size=1'])).toBe(tiered);
    expect(wasmCompilerFlag([], '--max-old-space-size=512  --v8-pool-size=1')).toBe(tiered);
  });

  it('refuses a second process on the same DATA_DIR while the first holds it', async () => {
    const holder = await openDatabase(config());
    try {
      const lockPath = join(dataDir, 'pgdata', 'embedded-db.lock');
      // Pretend another live process (our parent) owns the lock, as a second `npm start` would see it.
      await writeFile(lockPath, String(process.ppid));
      await expect(openDatabase(config())).rejects.toThrow(/in use by process/);
      await writeFile(lockPath, String(process.pid));
    } finally {
      await holder.close();
    }
  });
});
