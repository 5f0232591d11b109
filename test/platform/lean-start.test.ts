import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.js';
import {
  PROCESS_TEST_TIMEOUT_MS,
  preparedDataDir,
  registerOver,
  startService,
} from '../helpers/service-process.js';

const preload = fileURLToPath(new URL('../helpers/loaded-modules.cjs', import.meta.url));

/**
 * Starts a service process on an up-to-date database, lets `use` talk to it, stops it and answers
 * the CommonJS modules it loaded.
 */
async function modulesLoadedBy(use: (httpUrl: string) => Promise<unknown>): Promise<string[]> {
  const dataDir = await preparedDataDir('atrium-lean-');
  const listFile = join(await mkdtemp(join(tmpdir(), 'atrium-modules-')), 'loaded.txt');
  // Postgres mode: a migrated clone of its own (the run's DATABASE_URL is not migrated).
  const testDb = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
  try {
    const service = startService(dataDir, {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${preload}`,
      LOADED_MODULES_FILE: listFile,
      ...(testDb?.url ? { DATABASE_URL: testDb.url } : {}),
    });
    const { httpPort } = await service.listening;
    await use(`http://127.0.0.1:${httpPort}`);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    return (await readFile(listFile, 'utf8')).split('\n');
  } finally {
    await testDb?.drop();
    await rm(dataDir, { recursive: true, force: true });
    await rm(join(listFile, '..'), { recursive: true, force: true });
  }
}

/**
 * MikroORM (with knex) only migrates: a service process whose database is up to date serves on
 * node-pg's pool and never loads them; nor does it load the OpenAPI document's builder or Swagger
 * UI before someone asks for them, nor the response serializers' compiler (fast-json-stringify,
 * with ajv) before its first response, nor Node's fetch implementation (docs/performance.md,
 * "Process memory and start time").
 */
describe('a service process on an up-to-date database', () => {
  it(
    'serves statements and transactions without loading MikroORM, knex, the OpenAPI machinery or fetch',
    async () => {
      // Registering writes the account and its session in a transaction.
      const loaded = await modulesLoadedBy((url) => registerOver(url));
      expect(loaded.filter((path) => path.includes('/node_modules/pg/')).length).toBeGreaterThan(0);
      expect(loaded.filter((path) => /[\\/](@mikro-orm|knex|umzug)[\\/]/.test(path))).toEqual([]);
      // The OpenAPI document's builder and the reference page load on their first request.
      expect(
        loaded.filter((path) =>
          /[\\/]node_modules[\\/](@fastify[\\/]swagger|@fastify[\\/]static|yaml)/.test(path),
        ),
      ).toEqual([]);
      // node-pg's check for Cloudflare Workers would load Node's fetch implementation (pg-driver.ts).
      expect(loaded).toContain('node:net');
      expect(loaded.filter((path) => path.includes('undici'))).toEqual([]);
      // Its answer was serialized by the compiler loaded for it.
      expect(loaded.some((path) => /[\\/]fast-json-stringify[\\/]index\.js$/.test(path))).toBe(true);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'loads neither ajv nor the serializers compiler before it answers a request',
    async () => {
      const loaded = await modulesLoadedBy(async () => {});
      expect(
        loaded.filter((path) =>
          /[\\/]node_modules[\\/](ajv|ajv-formats|fast-uri|@fastify[\\/]ajv-compiler)[\\/]|[\\/]fast-json-stringify[\\/]index\.js$/.test(
            path,
          ),
        ),
      ).toEqual([]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
