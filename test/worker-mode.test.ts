import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';
import { freePort } from './helpers/redis-server.js';
import {
  eventually,
  healthOnNewConnection,
  PROCESS_TEST_TIMEOUT_MS,
  registerOver,
  type ServiceProcess,
  startService,
} from './helpers/service-process.js';
import { authedSocket, request, type TestSocket } from './helpers/ws-client.js';

const { DATABASE_URL, REDIS_URL } = process.env;

interface Health {
  pid: number;
  worker: number | null;
}

/**
 * The supervisor's last line, once read: the process's exit can be seen before the last lines it
 * wrote to its stdout pipe are.
 */
const supervisorEnd = (service: ServiceProcess) =>
  eventually(
    async () =>
      service.lines.find((line) => line.msg.startsWith('shutdown complete') && line.worker === undefined),
    "the supervisor's shutdown line",
    10_000,
  );

// Worker mode exists only in production mode: the workers share a PostgreSQL and a Redis.
describe.skipIf(!DATABASE_URL || !REDIS_URL)(
  'worker mode, WORKERS=2 (needs DATABASE_URL and REDIS_URL)',
  () => {
    let testDb: TestDatabase;
    let dataDir: string;
    let service: ServiceProcess;
    let httpUrl: string;
    let wsUrl: string;
    const sockets: TestSocket[] = [];
    let healthRequests = 0;

    const health = () => {
      healthRequests++;
      return healthOnNewConnection<Health>(httpUrl);
    };

    const workersAnswering = async (count: number, excluding: ReadonlySet<number> = new Set()) => {
      const seen = new Map<number, Health>();
      return eventually(async () => {
        // A connection handed to the worker just killed fails; a later one reaches a live worker.
        const answer = await health().catch(() => undefined);
        if (answer && !excluding.has(answer.pid)) seen.set(answer.pid, answer);
        return seen.size >= count ? [...seen.values()] : undefined;
      }, `${count} workers answering`);
    };

    beforeAll(async () => {
      testDb = await createTestDatabase();
      dataDir = await mkdtemp(join(tmpdir(), 'atrium-workers-'));
      service = startService(dataDir, {
        DATABASE_URL: testDb.url as string,
        REDIS_URL: REDIS_URL as string,
        REDIS_KEY_PREFIX: `test:workers:${randomBytes(6).toString('hex')}:`,
        MIGRATE_ON_START: 'false',
        WORKERS: '2',
        REGISTER_IP_MAX_ATTEMPTS: '1000',
      });
      const { httpPort, wsPort } = await service.listening;
      httpUrl = `http://127.0.0.1:${httpPort}`;
      wsUrl = `ws://127.0.0.1:${wsPort}/ws`;
    }, PROCESS_TEST_TIMEOUT_MS);

    afterAll(async () => {
      for (const socket of sockets) socket.close();
      if (service && service.child.exitCode === null && service.child.signalCode === null) {
        service.child.kill('SIGTERM');
        await service.exited;
      }
      await testDb?.drop();
      await rm(dataDir, { recursive: true, force: true });
    });

    it(
      'serves REST on one HTTP port from two worker processes, and the control channel from worker 1 only',
      async () => {
        const answers = await workersAnswering(2);
        expect(answers.map((answer) => answer.worker).sort()).toEqual([1, 2]);
        expect(new Set(answers.map((answer) => answer.pid)).size).toBe(2);
        expect(answers.map((answer) => answer.pid)).not.toContain(service.child.pid);
        const control = service.lines.filter((line) => line.msg.startsWith('control channel'));
        expect(control.map((line) => [line.msg, line.worker])).toEqual([['control channel listening', 1]]);
      },
      PROCESS_TEST_TIMEOUT_MS,
    );

    it(
      "answers /metrics for the whole host: one scrape counts every worker's requests",
      async () => {
        // Both workers answered /healthz above; each worker's own registry holds only its part.
        const count = await eventually(async () => {
          const text = await (await fetch(`${httpUrl}/metrics`)).text();
          const match =
            /atrium_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} (\d+)/.exec(
              text,
            );
          const counted = Number(match?.[1] ?? 0);
          return counted === healthRequests ? counted : undefined;
        }, 'the scrape to count every /healthz request');
        expect(count).toBe(healthRequests);
      },
      PROCESS_TEST_TIMEOUT_MS,
    );

    it(
      'restarts a worker killed with -9, whose sockets close and whose users go offline on the other worker',
      async () => {
        // The kernel spreads connections to the shared gateway port over both workers: with twelve,
        // all on one worker has a chance of 1 in 2048.
        const users = [];
        // One after the other: twelve password hashes at once outlast the database's 1 s bound.
        for (let i = 0; i < 12; i++) users.push(await registerOver(httpUrl));
        const userIds = users.map((user) => user.user.id);
        for (const user of users) {
          const socket = await authedSocket(wsUrl, user.access_token);
          sockets.push(socket);
          expect((await request(socket, 'presence.subscribe', { user_ids: userIds })).t).toBe('ack');
        }
        const before = await workersAnswering(2);
        const victim = before[0] as Health;
        process.kill(victim.pid, 'SIGKILL');

        const [replacement] = await workersAnswering(1, new Set(before.map((answer) => answer.pid)));
        expect(replacement?.worker).toBe(victim.worker);
        expect(service.lines).toContainEqual(
          expect.objectContaining({
            msg: 'worker exited unexpectedly; restarting it',
            pid: victim.pid,
            signal: 'SIGKILL',
          }),
        );

        const open = sockets.filter((socket) => socket.open);
        const closedUsers = userIds.filter((_, i) => !sockets[i]?.open);
        expect(open.length).toBeGreaterThan(0);
        expect(closedUsers.length).toBeGreaterThan(0);
        const watcher = open[0] as TestSocket;
        for (const userId of closedUsers) {
          const offline = await watcher.next(
            (frame) =>
              frame.t === 'presence' &&
              (frame.d as { user_id: string; status: string }).user_id === userId &&
              (frame.d as { status: string }).status === 'offline',
            30_000,
          );
          expect(offline.d).toMatchObject({ user_id: userId, status: 'offline' });
        }
      },
      PROCESS_TEST_TIMEOUT_MS,
    );

    it(
      'drains every worker on SIGTERM: sockets close with 1001 and the supervisor exits 0',
      async () => {
        const user = await registerOver(httpUrl);
        const socket = await authedSocket(wsUrl, user.access_token);
        service.child.kill('SIGTERM');
        expect((await socket.closed).code).toBe(1001);
        expect(await service.exited).toBe(0);
        expect(await supervisorEnd(service)).toMatchObject({ msg: 'shutdown complete', code: 0 });
        const stopped = service.lines.filter((line) => line.msg === 'worker stopped');
        expect(stopped.map((line) => [line.worker, line.code]).sort()).toEqual([
          [1, 0],
          [2, 0],
        ]);
        expect(service.lines.filter((line) => line.msg === 'shutdown step failed')).toEqual([]);
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  },
);

describe.skipIf(!DATABASE_URL || !REDIS_URL)(
  'worker mode by default in production mode (needs DATABASE_URL and REDIS_URL)',
  () => {
    it(
      'runs a worker per available core when WORKERS is not set, and one process on a one-core host',
      async () => {
        const testDb = await createTestDatabase();
        const dataDir = await mkdtemp(join(tmpdir(), 'atrium-workers-auto-'));
        const service = startService(dataDir, {
          DATABASE_URL: testDb.url as string,
          REDIS_URL: REDIS_URL as string,
          REDIS_KEY_PREFIX: `test:workers-auto:${randomBytes(6).toString('hex')}:`,
          MIGRATE_ON_START: 'false',
          // Empty is unset: startService's own default is one process.
          WORKERS: '',
        });
        try {
          const { httpPort } = await service.listening;
          const cores = availableParallelism();
          // The supervisor says how many it starts before it forks them, so before any listens.
          const starting = service.lines.filter((line) => line.msg === 'starting workers');
          expect(starting.map((line) => line.workers)).toEqual(cores > 1 ? [cores] : []);
          // A lone process answers `worker: null`; workers answer their slots, 1 to the count.
          const expected = cores > 1 ? Array.from({ length: cores }, (_, i) => i + 1) : [null];
          const seen = new Set<number | null>();
          await eventually(async () => {
            const answer = await healthOnNewConnection<Health>(`http://127.0.0.1:${httpPort}`).catch(
              () => undefined,
            );
            if (answer) seen.add(answer.worker);
            return seen.size >= expected.length ? true : undefined;
          }, `${expected.length} processes answering`);
          expect([...seen].sort((a, b) => Number(a) - Number(b))).toEqual(expected);
          service.child.kill('SIGTERM');
          expect(await service.exited).toBe(0);
        } finally {
          if (service.child.exitCode === null && service.child.signalCode === null)
            service.child.kill('SIGKILL');
          await testDb.drop();
          await rm(dataDir, { recursive: true, force: true });
        }
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  },
);

// Runs in both passes: the database and Redis it names are ports nobody listens on.
describe('worker mode, a worker that cannot start', () => {
  it(
    'is restarted after 1 s, then 2 s, instead of in a loop, and SIGTERM still ends the supervisor',
    async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'atrium-workers-down-'));
      const [databasePort, redisPort] = [await freePort(), await freePort()];
      const service = startService(dataDir, {
        DATABASE_URL: `postgres://atrium@127.0.0.1:${databasePort}/atrium`,
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        WORKERS: '2',
      });
      try {
        const restarts = () =>
          service.lines.filter(
            (line) => line.msg === 'worker exited unexpectedly; restarting it' && line.worker === 1,
          );
        await eventually(
          async () => (restarts().length >= 2 ? true : undefined),
          'two restarts of worker 1',
          90_000,
        );
        expect(
          restarts()
            .map((line) => line.restartInMs)
            .slice(0, 2),
        ).toEqual([1000, 2000]);
        service.child.kill('SIGTERM');
        const code = await service.exited;
        expect([0, 1]).toContain(code);
        expect(await supervisorEnd(service)).toMatchObject({ code });
      } finally {
        if (service.child.exitCode === null && service.child.signalCode === null)
          service.child.kill('SIGKILL');
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
