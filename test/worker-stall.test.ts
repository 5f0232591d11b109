import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from './helpers/database.js';
import {
  eventually,
  healthOnNewConnection,
  type LogLine,
  PROCESS_TEST_TIMEOUT_MS,
  type ServiceProcess,
  startService,
} from './helpers/service-process.js';

const { DATABASE_URL, REDIS_URL } = process.env;

interface Health {
  pid: number;
  worker: number;
}

/**
 * Runs `test` against `serve` in worker mode (WORKERS=2) with a stall timeout of 2 s, then stops
 * it, and kills whatever is left (a stopped worker included).
 */
async function withWorkers(
  env: Record<string, string>,
  test: (service: ServiceProcess, httpUrl: string) => Promise<void>,
): Promise<void> {
  const testDb = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-stall-'));
  const service = startService(dataDir, {
    DATABASE_URL: testDb.url as string,
    REDIS_URL: REDIS_URL as string,
    REDIS_KEY_PREFIX: `test:stall:${randomBytes(6).toString('hex')}:`,
    MIGRATE_ON_START: 'false',
    WORKERS: '2',
    WORKER_STALL_TIMEOUT_SECONDS: '2',
    ...env,
  });
  try {
    const { httpPort } = await service.listening;
    await test(service, `http://127.0.0.1:${httpPort}`);
  } finally {
    if (service.child.exitCode === null && service.child.signalCode === null) {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    await testDb.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const health = (httpUrl: string) => healthOnNewConnection<Health>(httpUrl);

/** The workers answering /healthz until `count` of them did, leaving out the pids `excluding`. */
async function workersAnswering(httpUrl: string, count: number, excluding: ReadonlySet<number> = new Set()) {
  const seen = new Map<number, Health>();
  return eventually(async () => {
    const answer = await health(httpUrl).catch(() => undefined);
    if (answer && !excluding.has(answer.pid)) seen.set(answer.pid, answer);
    return seen.size >= count ? [...seen.values()] : undefined;
  }, `${count} workers answering`);
}

const replacements = (lines: readonly LogLine[]) =>
  lines.filter((line) => line.msg.startsWith('replacing a stalled worker'));

/** The supervisor's lines on a stalled worker: killed, restarted, and a new worker in its slot answers. */
async function expectReplaced(
  service: ServiceProcess,
  httpUrl: string,
  before: readonly Health[],
  victim: Health,
) {
  const replaced = await eventually(
    () => replacements(service.lines).find((line) => line.pid === victim.pid),
    'the stalled worker to be replaced',
  );
  expect(replaced).toMatchObject({ level: 50, worker: victim.worker, silentSeconds: expect.any(Number) });
  const [replacement] = await workersAnswering(httpUrl, 1, new Set(before.map((answer) => answer.pid)));
  expect(replacement?.worker).toBe(victim.worker);
  expect(service.lines).toContainEqual(
    expect.objectContaining({
      msg: 'worker exited unexpectedly; restarting it',
      pid: victim.pid,
      signal: 'SIGKILL',
    }),
  );
  // Both workers took seconds to start, longer than the timeout: only the stalled one was killed.
  expect(replacements(service.lines).map((line) => line.pid)).toEqual([victim.pid]);
}

describe.skipIf(!DATABASE_URL || !REDIS_URL)(
  'worker mode, a stalled worker (needs DATABASE_URL and REDIS_URL)',
  () => {
    it(
      'is killed once it has not said it is alive for WORKER_STALL_TIMEOUT_SECONDS, and a new worker takes its slot',
      async () => {
        await withWorkers({}, async (service, httpUrl) => {
          const before = await workersAnswering(httpUrl, 2);
          const victim = before[0] as Health;
          // A stopped process runs nothing, as a worker whose event loop never returns.
          process.kill(victim.pid, 'SIGSTOP');
          await expectReplaced(service, httpUrl, before, victim);
        });
      },
      PROCESS_TEST_TIMEOUT_MS,
    );

    it(
      'is replaced when an extension rpc loops forever',
      async () => {
        const extension = fileURLToPath(new URL('./fixtures/spin-extension.mjs', import.meta.url));
        await withWorkers({ EXTENSIONS: extension }, async (service, httpUrl) => {
          const before = await workersAnswering(httpUrl, 2);
          // Never answered: the worker that takes it spins until it is killed.
          const spin = request(`${httpUrl}/api/rpc/spin`, { method: 'POST', agent: false });
          spin.on('error', () => {});
          spin.end();
          const replaced = await eventually(
            () => replacements(service.lines)[0],
            'a stalled worker to be replaced',
          );
          const victim = before.find((answer) => answer.pid === replaced.pid);
          expect(victim).toBeDefined();
          await expectReplaced(service, httpUrl, before, victim as Health);
        });
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  },
);
