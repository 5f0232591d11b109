import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { registerOver, type ServiceProcess, startService } from '../helpers/service-process.js';
import { authedSocket, request, type TestSocket } from '../helpers/ws-client.js';

const { DATABASE_URL, REDIS_URL } = process.env;

// Two processes can only share presence through a real Postgres and Redis; in embedded mode each
// process has its own in-process KV store, so there is no other node to notice the death.
describe.skipIf(!DATABASE_URL || !REDIS_URL)(
  'a node killed with -9 (needs DATABASE_URL and REDIS_URL)',
  () => {
    let testDb: TestDatabase;
    let dataDir: string;
    const services: ServiceProcess[] = [];
    const sockets: TestSocket[] = [];

    /** One more node of the deployment: same database, same Redis namespace, same signing key. */
    const startNode = async (env: Record<string, string>) => {
      const service = startService(dataDir, env);
      services.push(service);
      const { httpPort, wsPort } = await service.listening;
      return { service, httpUrl: `http://127.0.0.1:${httpPort}`, wsUrl: `ws://127.0.0.1:${wsPort}/ws` };
    };

    beforeAll(async () => {
      testDb = await createTestDatabase();
      dataDir = await mkdtemp(join(tmpdir(), 'atrium-failover-'));
    });

    afterAll(async () => {
      for (const socket of sockets) socket.close();
      for (const { child, exited } of services) {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      }
      await testDb?.drop();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('is reported offline to a subscriber on another node within 15 s', { timeout: 90_000 }, async () => {
      const env = {
        DATABASE_URL: testDb.url as string,
        REDIS_URL: REDIS_URL as string,
        REDIS_KEY_PREFIX: `test:failover:${randomBytes(6).toString('hex')}:`,
        MIGRATE_ON_START: 'false',
      };
      // Started one after the other, so the second reads the signing key the first generated.
      const a = await startNode(env);
      const b = await startNode(env);
      const subject = await registerOver(a.httpUrl);
      const watcher = await registerOver(b.httpUrl);
      sockets.push(await authedSocket(a.wsUrl, subject.access_token));
      const watching = await authedSocket(b.wsUrl, watcher.access_token);
      sockets.push(watching);
      const ack = await request(watching, 'presence.subscribe', { user_ids: [subject.user.id] });
      expect(ack.d).toEqual({ presence: { [subject.user.id]: 'online' } });

      a.service.child.kill('SIGKILL');
      // The wait's deadline is the bound: the node's presence lease lapses well within it.
      const offline = await watching.next(
        (f) => f.t === 'presence' && (f.d as { status: string }).status === 'offline',
        15_000,
      );
      expect(offline.d).toMatchObject({ user_id: subject.user.id, status: 'offline' });
      const query = await request(watching, 'presence.query', { user_ids: [subject.user.id] });
      expect(query.d).toEqual({ presence: { [subject.user.id]: 'offline' } });
    });
  },
);
