import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Party } from '../../protocol/parties.js';
import { bearer } from '../helpers/accounts.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  PROCESS_TEST_TIMEOUT_MS,
  registerOver,
  type ServiceProcess,
  startService,
} from '../helpers/service-process.js';
import { authedSocket, type ReceivedFrame, type TestSocket } from '../helpers/ws-client.js';

const { DATABASE_URL, REDIS_URL } = process.env;

const partyOf = (frame: ReceivedFrame) => (frame.d as { party: Party }).party;
const memberIds = (frame: ReceivedFrame) => partyOf(frame).members.map((member) => member.user_id);

// Processes share parties and presence only through a real Postgres and Redis: embedded, each
// process has a database and a KV store of its own.
describe.skipIf(!DATABASE_URL || !REDIS_URL)(
  'a party whose node is killed with -9 (needs DATABASE_URL and REDIS_URL)',
  () => {
    let testDb: TestDatabase;
    let dataDir: string;
    const services: ServiceProcess[] = [];
    const sockets: TestSocket[] = [];

    const startNode = async (env: Record<string, string>) => {
      const service = startService(dataDir, env);
      services.push(service);
      const { httpPort, wsPort } = await service.listening;
      return { service, httpUrl: `http://127.0.0.1:${httpPort}`, wsUrl: `ws://127.0.0.1:${wsPort}/ws` };
    };

    const call = async (
      httpUrl: string,
      user: TokenResponse,
      method: string,
      path: string,
      body?: object,
    ) => {
      const response = await fetch(`${httpUrl}${path}`, {
        method,
        headers: { ...bearer(user.access_token), ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await response.text();
      expect(response.status, `${method} ${path}: ${text}`).toBeLessThan(300);
      return text ? (JSON.parse(text) as Party) : undefined;
    };

    beforeAll(async () => {
      testDb = await createTestDatabase();
      dataDir = await mkdtemp(join(tmpdir(), 'atrium-party-node-'));
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

    it("survives the node that created it and held its members' sockets, whose members the other nodes remove once", {
      timeout: PROCESS_TEST_TIMEOUT_MS,
    }, async () => {
      const env = {
        DATABASE_URL: testDb.url as string,
        REDIS_URL: REDIS_URL as string,
        REDIS_KEY_PREFIX: `test:party-node:${randomBytes(6).toString('hex')}:`,
        MIGRATE_ON_START: 'false',
        NODE_LEASE_SECONDS: '2',
        PARTY_OFFLINE_GRACE_SECONDS: '2',
      };
      // One after the other, so the later ones read the signing key the first generated.
      const doomed = await startNode(env);
      const b = await startNode(env);
      const c = await startNode(env);
      const [leader, member, survivor] = [
        await registerOver(doomed.httpUrl),
        await registerOver(doomed.httpUrl),
        await registerOver(b.httpUrl),
      ];
      sockets.push(await authedSocket(doomed.wsUrl, leader.access_token));
      sockets.push(await authedSocket(doomed.wsUrl, member.access_token));
      const watching = await authedSocket(c.wsUrl, survivor.access_token);
      sockets.push(watching);
      const party = (await call(doomed.httpUrl, leader, 'POST', '/api/parties', { open: true })) as Party;
      await call(doomed.httpUrl, member, 'POST', `/api/parties/${party.id}/join`);
      await call(b.httpUrl, survivor, 'POST', `/api/parties/${party.id}/join`);
      const joined = await watching.next((f) => f.t === 'party.updated' && memberIds(f).length === 3);
      const after = (joined.pos as { offset: number }).offset;

      doomed.service.child.kill('SIGKILL');
      // The party is in the shared database: the other nodes serve it at once.
      const read = (await call(b.httpUrl, survivor, 'GET', `/api/parties/${party.id}`)) as Party;
      expect(read.members).toHaveLength(3);

      // Once the dead node's lease lapses its users are offline; after the grace, out, once each.
      const alone = await watching.next((f) => f.t === 'party.updated' && memberIds(f).length === 1, 60_000);
      expect(partyOf(alone)).toMatchObject({ leader_id: survivor.user.id });
      await call(c.httpUrl, survivor, 'PATCH', `/api/parties/${party.id}`, { max_size: 5 });
      await watching.next((f) => f.t === 'party.updated' && partyOf(f).max_size === 5);
      const removals = [alone, ...watching.frames].filter(
        (f) =>
          f.t === 'party.updated' &&
          (f.pos as { offset: number }).offset > after &&
          partyOf(f).max_size !== 5,
      );
      // The leader's removal and the member's: one event each, whichever node swept.
      expect(
        removals
          .map(memberIds)
          .map((ids) => ids.length)
          .sort(),
      ).toEqual([1, 2]);
      expect(removals.every((f) => memberIds(f).includes(survivor.user.id))).toBe(true);
    });
  },
);
