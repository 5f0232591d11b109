import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getMe, heartbeat, registerUser } from '../helpers/accounts.js';
import {
  buildTestApp,
  buildTestCluster,
  type TestApp,
  type TestCluster,
  useTestApp,
} from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { authedSocket, request } from '../helpers/ws-client.js';

type Node = Pick<TestApp, 'http'>;

/** The last-seen time a REST heartbeat answers with. */
const lastSeenOfHeartbeat = async (app: Node, token: string) =>
  ((await heartbeat(app, token)).json() as { last_seen_at: string }).last_seen_at;

const lastSeenInMe = async (app: Node, token: string) => {
  const response = await getMe(app, token);
  expect(response.statusCode).toBe(200);
  return (response.json() as { last_seen_at: string | null }).last_seen_at;
};

const lastSeenInDatabase = async (app: TestApp, userId: string) => {
  const rows = await queryRows<{ last_seen_at: Date | null }>(
    app.db,
    'select last_seen_at from users where id = ?',
    [userId],
  );
  return rows[0]?.last_seen_at ? new Date(rows[0].last_seen_at).toISOString() : null;
};

describe('last_seen_at writes', () => {
  it('resume on the next interval after a flush failed, writing the sighting of the failed batch', async () => {
    const app = await buildTestApp({ LAST_SEEN_FLUSH_MS: 100 });
    try {
      const user = await registerUser(app);
      await queryRows(app.db, 'alter table users rename column last_seen_at to last_seen_at_gone');
      const seen = await lastSeenOfHeartbeat(app, user.access_token);
      await expect(app.modules.presence.flushLastSeen()).rejects.toThrow(/last_seen_at/);
      await queryRows(app.db, 'alter table users rename column last_seen_at_gone to last_seen_at');
      // No flush is called by hand from here: the tracker's own interval must write it.
      await expect.poll(() => lastSeenInDatabase(app, user.user.id), { timeout: 3000 }).toBe(seen);
    } finally {
      await app.close();
    }
  });
});

describe('GET /api/users/me right after a heartbeat', () => {
  // A flush interval far longer than the test, so only an unflushed sighting can be read.
  const app = useTestApp({ LAST_SEEN_FLUSH_MS: 600_000 });

  it('shows the REST heartbeat the caller just made, before it is written to the database', async () => {
    const user = await registerUser(app());
    const seen = await lastSeenOfHeartbeat(app(), user.access_token);
    expect(await lastSeenInMe(app(), user.access_token)).toBe(seen);
    expect(await lastSeenInDatabase(app(), user.user.id)).toBeNull();
  });

  it('shows the heartbeat frame the caller just sent on its socket', async () => {
    const user = await registerUser(app());
    const socket = await authedSocket(app().wsUrl, user.access_token);
    try {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const ack = await request(socket, 'presence.heartbeat');
      const seen = (ack.d as { last_seen_at: string }).last_seen_at;
      expect(await lastSeenInMe(app(), user.access_token)).toBe(seen);
    } finally {
      socket.close();
    }
  });

  it('keeps the newer database value when the stored one is later than the pending sighting', async () => {
    const user = await registerUser(app());
    await lastSeenOfHeartbeat(app(), user.access_token);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    await queryRows(app().db, 'update users set last_seen_at = ? where id = ?', [later, user.user.id]);
    expect(await lastSeenInMe(app(), user.access_token)).toBe(later);
  });
});

describe('GET /api/users/me on another node right after a heartbeat', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await buildTestCluster(2, { LAST_SEEN_FLUSH_MS: 600_000 });
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('shows the heartbeat through the shared presence key', async () => {
    const [a, b] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const user = await registerUser(a);
    const seen = await lastSeenOfHeartbeat(a, user.access_token);
    expect(await lastSeenInMe(b, user.access_token)).toBe(seen);
  });
});
