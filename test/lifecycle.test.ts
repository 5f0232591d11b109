import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerUser } from './helpers/accounts.js';
import { buildOwningApp } from './helpers/app.js';
import { createTestDatabase, queryRows } from './helpers/database.js';
import {
  PROCESS_TEST_TIMEOUT_MS,
  preparedDataDir,
  registerOver,
  startService,
} from './helpers/service-process.js';
import { authedSocket, TestSocket } from './helpers/ws-client.js';

describe('service lifecycle', () => {
  let dataDir: string;
  let service: ReturnType<typeof startService>;
  let child: ChildProcess;

  beforeAll(async () => {
    dataDir = await preparedDataDir('atrium-life-');
    service = startService(dataDir);
    child = service.child;
  });

  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it(
    'serves /healthz after start and logs the ports it chose',
    async () => {
      const listening = await service.listening;
      expect(listening.httpPort).toBeGreaterThan(0);
      expect(listening.wsPort).toBeGreaterThan(0);
      const response = await fetch(`http://127.0.0.1:${listening.httpPort}/healthz`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ status: 'ok' });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'shuts down on SIGTERM: closes sockets with 1001, stops accepting, exits 0',
    async () => {
      const { httpPort, wsPort } = await service.listening;
      const socket = await TestSocket.connect(`ws://127.0.0.1:${wsPort}/ws`);
      child.kill('SIGTERM');
      expect((await socket.closed).code).toBe(1001);
      expect(await service.exited).toBe(0);
      expect(service.lines.map((l) => l.msg)).toEqual(
        expect.arrayContaining(['shutting down', 'shutdown complete']),
      );
      expect(service.lines.filter((l) => l.msg === 'shutdown step failed')).toEqual([]);
      await expect(fetch(`http://127.0.0.1:${httpPort}/healthz`)).rejects.toThrow();
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe('shutdown after a failure', () => {
  it('still closes the gateway, the KV store and the database when the final last_seen_at flush fails, then rejects', async () => {
    // The app must own its database and KV store here, so that closing them is its own job.
    const { app, logged, dispose } = await buildOwningApp({ SHUTDOWN_GRACE_MS: 2000 });
    try {
      const { wsPort } = await app.listen();
      const user = await registerUser(app);
      const socket = await authedSocket(`ws://127.0.0.1:${wsPort}/ws`, user.access_token);
      // A real failing statement: the flush's column is gone when the last sightings are written.
      await queryRows(app.db, 'alter table users rename column last_seen_at to last_seen_at_gone');
      const closing = app.close();
      expect((await socket.closed).code).toBe(1001);
      await expect(closing).rejects.toThrow(/1 shutdown step\(s\) failed/);
      const failed = logged.filter((line) => line.msg === 'shutdown step failed').map((line) => line.step);
      // Presence's stop ends presence, gives up the node lease and writes the last sightings.
      expect(failed).toEqual(['stop the presence module']);
      expect(app.http.server.listening).toBe(false);
      await expect(app.kv.ping()).rejects.toThrow();
      await expect(queryRows(app.db, 'select 1')).rejects.toThrow();
    } finally {
      await dispose();
    }
  });
});

describe.skipIf(!process.env.DATABASE_URL)(
  'the CLI after a failed shutdown step (needs DATABASE_URL)',
  () => {
    // The test breaks the service's database from outside, which only a Postgres server allows.
    it(
      'logs the failed step, still finishes every other one, and exits 1',
      async () => {
        const testDb = await createTestDatabase();
        const dataDir = await mkdtemp(join(tmpdir(), 'atrium-life-fail-'));
        const service = startService(dataDir, {
          DATABASE_URL: testDb.url as string,
          MIGRATE_ON_START: 'false',
        });
        try {
          const { httpPort, wsPort } = await service.listening;
          const user = await registerOver(`http://127.0.0.1:${httpPort}`);
          const socket = await authedSocket(`ws://127.0.0.1:${wsPort}/ws`, user.access_token);
          await queryRows(testDb.db, 'alter table users rename column last_seen_at to last_seen_at_gone');
          service.child.kill('SIGTERM');
          expect((await socket.closed).code).toBe(1001);
          expect(await service.exited).toBe(1);
          const failed = service.lines.filter((line) => line.msg === 'shutdown step failed');
          expect(failed.map((line) => line.step)).toEqual(['stop the presence module']);
          expect(service.lines.at(-1)?.msg).toMatch(/^shutdown complete with failures/);
        } finally {
          if (service.child.exitCode === null) service.child.kill('SIGKILL');
          await testDb.drop();
          await rm(dataDir, { recursive: true, force: true });
        }
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  },
);

describe('uWebSockets.js JavaScript fallback', () => {
  it(
    'is reported by /healthz and a startup warning, and still answers frames',
    async () => {
      const dataDir = await preparedDataDir('atrium-fallback-');
      // The flag makes the uWS package load its JS shim, as it does on a Node without a native build.
      const service = startService(dataDir, { UWS_USE_FALLBACK: '1' });
      try {
        const { httpPort, wsPort } = await service.listening;
        const health = (await (await fetch(`http://127.0.0.1:${httpPort}/healthz`)).json()) as {
          gateway: unknown;
        };
        expect(health.gateway).toEqual({ transport: 'uws-js-fallback', native: false });
        expect(service.lines.some((l) => /slow JavaScript fallback/.test(l.msg))).toBe(true);
        const socket = await TestSocket.connect(`ws://127.0.0.1:${wsPort}/ws`);
        socket.sendFrame({ t: 'ping', id: 4 });
        expect(await socket.next((f) => f.t === 'pong')).toMatchObject({ id: 4 });
        socket.close();
      } finally {
        service.child.kill('SIGTERM');
        await service.exited;
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

/** The node flags before the script in a command line such as `node --flag dist/src/main.js serve`. */
function nodeFlags(words: string[]): string[] {
  expect(words[0]).toBe('node');
  const flags: string[] = [];
  for (let i = 1; i < words.length && words[i]?.startsWith('--'); i++) flags.push(words[i] as string);
  return flags;
}

describe('runtime flags', () => {
  it('are the same for npm start and the Docker image, which bound the young generation and give V8 one platform thread', async () => {
    const { scripts } = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: { start: string } };
    const startFlags = nodeFlags(scripts.start.split(/\s+/));
    const cmd = /^CMD (\[.*\])$/m.exec(await readFile('Dockerfile', 'utf8'))?.[1];
    const dockerFlags = nodeFlags(JSON.parse(cmd ?? '[]') as string[]);
    for (const bound of ['--min-semi-space-size=', '--max-semi-space-size='])
      expect(startFlags.some((flag) => flag.startsWith(bound))).toBe(true);
    expect(startFlags).toContain('--v8-pool-size=1');
    expect(dockerFlags).toEqual(startFlags);
  });
});
