import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createWebhooksModule } from '../../src/modules/webhooks/index.js';
import { launchesOf, silentCommand } from '../gameservers/fixtures/launches.js';
import { bearer, registerUser, registerWithRole, uniqueUsername } from '../helpers/accounts.js';
import { buildTestApp, testModules } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { memoryStart, overBound, runTarget, settings, summary, type TargetStats } from './harness.js';
import { type OpenApiDocument, operationsOf, restCaseArbitrary } from './rest-cases.js';
import { describeRestCase, sendRestCase } from './rest-driver.js';
import type { SchemaContext } from './schema-arbitrary.js';

/**
 * Walks every operation of the app's own /openapi.json with generated valid and hostile requests
 * (see docs/fuzzing.md). `npm test` runs a short pass with a fixed seed; `npm run fuzz` runs
 * FUZZ_CASES per operation.
 */
const CASES = settings.cases || 8;

const servers = silentCommand();
const app = await buildTestApp(
  {
    // The token must outlive a long run, which takes longer than the default 15 minutes.
    ACCESS_TOKEN_TTL_SECONDS: 86_400,
    // Per-user limits low enough that a run meets them: their refusals are fuzzed too.
    MAX_WORLDS_PER_USER: 3,
    MAX_ROOMS_PER_WORLD: 3,
    CREATE_RATE_LIMIT_COUNT: 5,
    SOCIAL_RATE_LIMIT_COUNT: 5,
    REPORT_RATE_LIMIT_COUNT: 3,
    DM_RATE_LIMIT_COUNT: 5,
    GAMESERVER_SPAWN_RATE_LIMIT_COUNT: 2,
    GAMESERVER_MAX_LIVE_PER_USER: 1,
    GAMESERVER_MAX_RUNNING: 4,
    MAX_GROUPS_PER_USER: 2,
    GROUP_MAX_MEMBERS: 3,
    GROUP_MAX_MEMBERSHIPS_PER_USER: 3,
    GAMESERVER_COMMAND: servers.command,
    // The peer's server below stays up for the whole run, its token live for the /internal cases.
    GAMESERVER_IDLE_STOP_SECONDS: 86_400,
    // The peer's party below outlives the run, though the peer sends no heartbeat.
    PARTY_OFFLINE_GRACE_SECONDS: 86_400,
    WEBHOOK_MAX_ENDPOINTS: 3,
    WEBHOOK_TIMEOUT_SECONDS: 1,
  },
  {
    // Generated host names resolve to nothing (422) rather than reaching the machine's DNS.
    modules: testModules.map((module) =>
      module.name === 'webhooks' ? createWebhooksModule({ resolve: async () => [] }) : module,
    ),
  },
);
// Neither password is ever generated, so no case can delete or sign out the fuzz account.
const peerPassword = randomBytes(12).toString('hex');
const fuzzUser = await registerUser(app, uniqueUsername('fuzz'), randomBytes(12).toString('hex'));
const peer = await registerUser(app, uniqueUsername('peer'), peerPassword);
// Signs the authenticated half of the webhook cases: admin-only routes read their input for
// admins alone. Other admin routes stay fuzzed as a user (an admin's cases could suspend the
// fuzz accounts).
const webhooksAdmin = await registerWithRole(app, 'admin');
const tokenFor = (path: string) =>
  path.startsWith('/api/admin/webhooks') ? webhooksAdmin.access_token : fuzzUser.access_token;
// A public world of the peer's (the fuzz user can read it, never delete it) with a ready game
// server, whose token signs the cases sent as a game server.
const world = await createWorld(app, peer.access_token, { visibility: 'public' });
const spawned = await app.http.inject({
  method: 'POST',
  url: `/api/worlds/${world.worldId}/servers`,
  headers: bearer(peer.access_token),
});
const serverId = (spawned.json() as { server_id: string }).server_id;
await vi.waitFor(
  async () => {
    const server = await app.http.inject({
      method: 'GET',
      url: `/api/servers/${serverId}`,
      headers: bearer(peer.access_token),
    });
    expect(server.json()).toMatchObject({ status: 'ready' });
  },
  { timeout: 20_000, interval: 50 },
);
const serverToken = launchesOf(servers.dir, world.worldId)[0]?.['server-token'] as string;
const asUser = (user: typeof peer, method: 'POST' | 'PUT', url: string, payload?: object) =>
  app.http.inject({ method, url, headers: bearer(user.access_token), ...(payload ? { payload } : {}) });
// The fuzz user is the peer's friend, and the peer online with a place on their server, so joins of
// a friend reach the server's rules (a case may end the friendship: those are fuzzed too). The fuzz
// user owns an invite-only server of the world, so invitations reach theirs.
await asUser(fuzzUser, 'POST', '/api/friends/requests', { user_id: peer.user.id });
await asUser(peer, 'POST', `/api/friends/requests/${fuzzUser.user.id}/accept`);
await asUser(peer, 'POST', `/api/worlds/${world.worldId}/join`);
await asUser(peer, 'POST', '/api/presence/heartbeat');
const ownServer = await asUser(fuzzUser, 'POST', `/api/worlds/${world.worldId}/join`, { access: 'invite' });
const ownServerId = (ownServer.json() as { server_id: string }).server_id;
// Groups of the peer's (the fuzz user may join, leave and chat, never delete them): one open with
// the fuzz user as an admin, so roster changes reach their rules, and one closed.
const peerGroup = async (name: string, join_policy: 'open' | 'closed') => {
  const created = await app.http.inject({
    method: 'POST',
    url: '/api/groups',
    headers: bearer(peer.access_token),
    payload: { name: `${name} ${randomBytes(4).toString('hex')}`, join_policy },
  });
  return (created.json() as { id: string }).id;
};
const openGroup = await peerGroup('Fuzz open', 'open');
const closedGroup = await peerGroup('Fuzz closed', 'closed');
await app.http.inject({
  method: 'POST',
  url: `/api/groups/${openGroup}/members`,
  headers: bearer(fuzzUser.access_token),
});
await app.http.inject({
  method: 'PATCH',
  url: `/api/groups/${openGroup}/members/${fuzzUser.user.id}`,
  headers: bearer(peer.access_token),
  payload: { role: 'admin' },
});
// An open party of the peer's that the fuzz user starts in: member routes reach their rules (the
// party's chat too: the catalogue lists it before the leave), the leader's answer 403, and a leave
// lets creates and joins through.
const peerParty = (
  (
    await app.http.inject({
      method: 'POST',
      url: '/api/parties',
      headers: bearer(peer.access_token),
      payload: { open: true },
    })
  ).json() as { id: string }
).id;
await app.http.inject({
  method: 'POST',
  url: `/api/parties/${peerParty}/join`,
  headers: bearer(fuzzUser.access_token),
});
const doc = (await app.http.inject({ method: 'GET', url: '/openapi.json' })).json() as OpenApiDocument;
const operations = operationsOf(doc).filter((op) => op.id.includes(settings.only));

const context: SchemaContext = {
  root: doc,
  dictionary: {
    user_id: [peer.user.id, fuzzUser.user.id],
    user_ids: [[peer.user.id, fuzzUser.user.id]],
    username: [peer.user.username],
    password: [peerPassword],
    refresh_token: [peer.refresh_token],
    world_id: [world.worldId],
    room_id: [world.mainRoomId],
    server_id: [serverId, ownServerId],
    group_id: [openGroup, closedGroup],
    party_id: [peerParty],
  },
};

describe('REST fuzzing of every OpenAPI operation', () => {
  const all: TargetStats[] = [];
  const startMemory = memoryStart();
  const startedAt = performance.now();

  afterAll(async () => {
    process.stdout.write(summary('rest', all, startMemory.bounded, startedAt));
    await app.close();
  });

  it('finds operations to fuzz in the OpenAPI document', () => {
    expect(operations.length).toBeGreaterThan(settings.only ? 0 : 10);
  });

  for (const op of operations) {
    it(
      `${op.id} answers valid and hostile requests without a 5xx, with catalogued problem+json errors, and stays up`,
      async () => {
        const stats = await runTarget({
          suite: 'rest',
          file: 'test/fuzz/rest.fuzz.test.ts',
          target: op.id,
          arbitrary: restCaseArbitrary(op, context),
          count: CASES,
          execute: (c) => sendRestCase({ app, token: tokenFor(op.path), serverToken }, c),
          describe: describeRestCase,
          checkpoint: async () => {
            const ready = await fetch(`${app.httpUrl}/readyz`);
            return ready.status === 200 ? undefined : `/readyz answered ${ready.status} over HTTP`;
          },
        });
        all.push(stats);
        expect(stats.failures.map((f) => `#${f.index} ${f.message}\n      ${f.reproduction}`)).toEqual([]);
        expect(overBound(startMemory, stats.memoryAfter)).toBeUndefined();
      },
      Math.max(60_000, CASES * 100),
    );
  }

  it("keeps the game server's token live, so the /internal cases ran as a server", async () => {
    const read = await app.http.inject({
      method: 'GET',
      url: `/internal/worlds/${world.worldId}`,
      headers: bearer(serverToken),
    });
    expect(read.statusCode).toBe(200);
  });

  it('keeps the fuzz account signed in, so the authenticated half of the cases ran as a user', async () => {
    const me = await app.http.inject({
      method: 'GET',
      url: '/api/users/me',
      headers: { authorization: `Bearer ${fuzzUser.access_token}` },
    });
    expect(me.statusCode).toBe(200);
  });
});
