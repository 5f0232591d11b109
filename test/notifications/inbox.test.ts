import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { NotificationsApi } from '../../src/modules/notifications/index.js';
import { bearer, PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { openedSockets } from '../helpers/ws-client.js';

/** The notification inbox and admin broadcasts (docs/notifications.md). */
describe('the notification inbox', () => {
  const app = useTestApp({ NOTIFICATIONS_MAX_PER_USER: 5 });
  const sockets = openedSockets(() => app().wsUrl);
  afterAll(() => sockets.closeAll());
  let admin: TokenResponse;
  beforeAll(async () => {
    admin = await registerWithRole(app(), 'admin');
  });
  const api = () => (app().modules as unknown as { notifications: NotificationsApi }).notifications;

  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, token: string, payload?: object) => {
    const response = await app().http.inject({
      method,
      url,
      headers: bearer(token),
      ...(payload ? { payload } : {}),
    });
    return { status: response.statusCode, body: response.body ? response.json() : null };
  };
  const broadcast = (body: object, token = admin.access_token) =>
    call('POST', '/api/admin/notifications', token, body);
  const notify = async (user: TokenResponse, count: number, code = 'news.update') => {
    for (let i = 0; i < count; i++) {
      const sent = await broadcast({
        user_ids: [user.user.id],
        code,
        subject: `Update ${i}`,
        content: { i },
      });
      expect(sent.status).toBe(202);
    }
  };
  const list = (user: TokenResponse, query = '') =>
    call('GET', `/api/notifications?${query}`, user.access_token);
  const unread = async (user: TokenResponse) =>
    (await call('GET', '/api/notifications/unread-count', user.access_token)).body.count as number;

  it('lists the caller’s notifications newest first in pages, with read state and the unread count', async () => {
    const alice = await registerUser(app());
    await notify(alice, 3);
    const first = await list(alice, 'limit=2');
    expect(first.body.items.map((n: { subject: string }) => n.subject)).toEqual(['Update 2', 'Update 1']);
    expect(first.body.items[0]).toEqual({
      id: expect.any(String),
      code: 'news.update',
      subject: 'Update 2',
      content: { i: 2 },
      sender_id: null,
      created_at: expect.stringMatching(/Z$/),
      read_at: null,
    });
    const rest = await list(alice, `limit=2&cursor=${first.body.next_cursor}`);
    expect(rest.body.items.map((n: { subject: string }) => n.subject)).toEqual(['Update 0']);
    expect(rest.body.next_cursor).toBeNull();
    expect(await unread(alice)).toBe(3);
    expect((await list(alice, 'cursor=bm9wZQ')).status).toBe(422);
    expect((await list(alice, 'unread=maybe')).status).toBe(422);
  });

  it('reads by ids (ignoring others’ ids) or all, keeping the first read_at, and lists unread ones', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    await notify(alice, 3);
    await notify(bob, 1);
    const [newest, middle] = (await list(alice)).body.items as { id: string }[];
    const bobs = (await list(bob)).body.items[0] as { id: string };
    expect(
      (
        await call('POST', '/api/notifications/read', alice.access_token, {
          ids: [newest?.id, newest?.id, bobs.id],
        })
      ).status,
    ).toBe(204);
    expect(await unread(alice)).toBe(2);
    expect(await unread(bob)).toBe(1);
    const readAt = (await list(alice)).body.items[0].read_at;
    expect(readAt).not.toBeNull();
    await call('POST', '/api/notifications/read', alice.access_token, { ids: [newest?.id, middle?.id] });
    expect((await list(alice)).body.items[0].read_at).toBe(readAt);
    expect((await list(alice, 'unread=true')).body.items).toHaveLength(1);
    expect((await call('POST', '/api/notifications/read', alice.access_token, { all: true })).status).toBe(
      204,
    );
    expect(await unread(alice)).toBe(0);
  });

  it.each([
    ['neither ids nor all', {}],
    ['both', { ids: ['x'], all: true }],
    ['an empty list', { ids: [] }],
    ['more than 100 ids', { ids: Array.from({ length: 101 }, (_, i) => `id-${i}`) }],
    ['all that is not true', { all: false }],
  ])('refuses a read with %s (422) and changes nothing', async (_what, body) => {
    const alice = await registerUser(app());
    await notify(alice, 1);
    const refused = await call('POST', '/api/notifications/read', alice.access_token, body);
    expect(refused.status).toBe(422);
    expect(await unread(alice)).toBe(1);
  });

  it('deletes the caller’s own notification, and answers 404 for another user’s, which stays theirs', async () => {
    const [alice, bob] = [await registerUser(app()), await registerUser(app())];
    await notify(alice, 1);
    await notify(bob, 1);
    const mine = (await list(alice)).body.items[0].id as string;
    const theirs = (await list(bob)).body.items[0].id as string;
    expect((await call('DELETE', `/api/notifications/${theirs}`, alice.access_token)).status).toBe(404);
    expect((await list(bob)).body.items).toHaveLength(1);
    expect((await call('DELETE', `/api/notifications/${mine}`, alice.access_token)).status).toBe(204);
    expect((await call('DELETE', `/api/notifications/${mine}`, alice.access_token)).status).toBe(404);
    expect((await call('DELETE', '/api/notifications/not-an-id', alice.access_token)).status).toBe(404);
  });

  it('keeps at most NOTIFICATIONS_MAX_PER_USER, removing the oldest read ones first, then the oldest unread', async () => {
    const alice = await registerUser(app());
    await notify(alice, 5);
    const items = (await list(alice)).body.items as { id: string; subject: string }[];
    // Read the newest and the second oldest: on overflow, the second oldest (read) goes first.
    await call('POST', '/api/notifications/read', alice.access_token, { ids: [items[0]?.id, items[3]?.id] });
    await broadcast({ user_ids: [alice.user.id], code: 'news.update', subject: 'Update 5' });
    const kept = (await list(alice)).body.items.map((n: { subject: string }) => n.subject);
    expect(kept).toEqual(['Update 5', 'Update 4', 'Update 3', 'Update 2', 'Update 0']);
    await broadcast({ user_ids: [alice.user.id], code: 'news.update', subject: 'Update 6' });
    await broadcast({ user_ids: [alice.user.id], code: 'news.update', subject: 'Update 7' });
    const after = (await list(alice)).body.items.map((n: { subject: string }) => n.subject);
    expect(after).toEqual(['Update 7', 'Update 6', 'Update 5', 'Update 3', 'Update 2']);
  });

  it('keeps the cap exactly when notifications for one user are stored at once', async () => {
    const alice = await registerUser(app());
    const sent = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        broadcast({ user_ids: [alice.user.id], code: 'news.update', subject: `Burst ${i}` }),
      ),
    );
    expect(sent.map((answer) => answer.status)).toEqual(Array(12).fill(202));
    const [row] = await queryRows<{ n: number }>(
      app().db,
      'select count(*)::int as n from notifications where user_id = ?',
      [alice.user.id],
    );
    expect(row?.n).toBe(5);
  });

  it('keeps the cap exactly when stores and deletions for one user run at once, and counts what stays', async () => {
    const alice = await registerUser(app());
    await notify(alice, 5);
    const first = (await list(alice)).body.items as { id: string }[];
    const answers = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) =>
        broadcast({ user_ids: [alice.user.id], code: 'news.update', subject: `Burst ${i}` }),
      ),
      ...first.slice(0, 3).map((n) => call('DELETE', `/api/notifications/${n.id}`, alice.access_token)),
    ]);
    // A deletion finds its notification unless a store's trim removed it first.
    expect(answers.slice(0, 8).map((answer) => answer.status)).toEqual(Array(8).fill(202));
    for (const answer of answers.slice(8)) expect([204, 404]).toContain(answer.status);
    const stored = async () =>
      (
        await queryRows<{ n: number }>(
          app().db,
          'select count(*)::int as n from notifications where user_id = ?',
          [alice.user.id],
        )
      )[0]?.n;
    expect(await stored()).toBe(5);
    // Had the count drifted from the rows, the next stores would keep fewer or more than they should.
    const kept = (await list(alice)).body.items as { id: string }[];
    for (const n of kept.slice(0, 2))
      expect((await call('DELETE', `/api/notifications/${n.id}`, alice.access_token)).status).toBe(204);
    await notify(alice, 1, 'news.after');
    expect(await stored()).toBe(4);
    await notify(alice, 2, 'news.after');
    expect(await stored()).toBe(5);
  });

  it('pushes each new notification live on the user’s recorded stream', async () => {
    const alice = await registerUser(app());
    const socket = await sockets.open(alice.access_token);
    await notify(alice, 1, 'news.live');
    const frame = await socket.next((f) => f.t === 'notification', 5_000);
    expect(frame).toMatchObject({
      t: 'notification',
      d: { code: 'news.live', subject: 'Update 0' },
      pos: expect.anything(),
    });
  });

  describe('admin broadcasts', () => {
    it('lets only admins broadcast (403, nothing written), after validating the body (422)', async () => {
      const [alice, moderator] = [await registerUser(app()), await registerWithRole(app(), 'moderator')];
      for (const user of [alice, moderator]) {
        const refused = await broadcast(
          { user_ids: [alice.user.id], code: 'news.x', subject: 'x' },
          user.access_token,
        );
        expect(refused.status).toBe(403);
        expect(refused.body.code).toBe('FORBIDDEN');
      }
      expect(await unread(alice)).toBe(0);
      for (const body of [
        { code: 'news.x', subject: 'x' },
        { user_ids: [alice.user.id], all: true, code: 'news.x', subject: 'x' },
        { user_ids: [alice.user.id], code: 'News', subject: 'x' },
        { user_ids: [alice.user.id], code: 'news.x', subject: '' },
        { user_ids: [alice.user.id], code: 'news.x', subject: 'x', content: { big: 'x'.repeat(4096) } },
        { user_ids: [alice.user.id], code: 'news.x', subject: 'x', content: [] },
      ])
        expect((await broadcast(body)).status).toBe(422);
      expect(await unread(alice)).toBe(0);
    });

    it('notifies named users before answering, skipping ids that name no account, audited with the count', async () => {
      const [alice, bob] = [await registerUser(app()), await registerUser(app())];
      const sent = await broadcast({
        user_ids: [
          alice.user.id,
          bob.user.id,
          alice.user.id,
          '01a226c3-ae83-71ef-8249-ac6535f2bf5a',
          'nobody',
        ],
        code: 'news.maintenance',
        subject: 'Maintenance tonight',
        content: { at: '22:00' },
      });
      expect(sent.status).toBe(202);
      expect(await unread(alice)).toBe(1);
      expect(await unread(bob)).toBe(1);
      const audit = await call('GET', `/api/admin/audit?target=${sent.body.id}`, admin.access_token);
      expect(audit.body.items[0]).toMatchObject({
        action: 'notifications.broadcast',
        target_type: 'notification_broadcast',
        after: { code: 'news.maintenance', subject: 'Maintenance tonight', recipients: 2 },
      });
    });

    it('starts notifying everyone as soon as a broadcast to all is accepted, without waiting for the job’s next pass', async () => {
      const user = await registerUser(app());
      const sent = await broadcast({ all: true, code: 'news.prompt', subject: 'Right away' });
      expect(sent.status).toBe(202);
      // Well within the job's 30 s between passes: the accepting node's job was woken.
      await vi.waitFor(async () => expect(await unread(user)).toBe(1), { timeout: 10_000, interval: 50 });
    });

    it('notifies every account once when broadcasting to all, nobody again on a later pass, and no account created after it', async () => {
      const users = await Promise.all(Array.from({ length: 4 }, () => registerUser(app())));
      const sent = await broadcast({ all: true, code: 'news.everyone', subject: 'Hello everyone' });
      expect(sent.status).toBe(202);
      await api().runBroadcasts();
      await api().runBroadcasts();
      const counts = await queryRows<{ user_id: string; n: number }>(
        app().db,
        "select user_id, count(*)::int as n from notifications where code = 'news.everyone' group by user_id",
        [],
      );
      const accounts = await queryRows<{ n: number }>(app().db, 'select count(*)::int as n from users', []);
      expect(counts).toHaveLength(accounts[0]?.n ?? -1);
      expect(counts.every((row) => row.n === 1)).toBe(true);
      for (const user of users) expect(await unread(user)).toBe(1);
      const late = await registerUser(app());
      await api().runBroadcasts();
      expect(await unread(late)).toBe(0);
    });
  });

  it('deletes an account’s notifications, and keeps those it caused with sender_id null', async () => {
    const alice = await registerUser(app());
    await notify(alice, 2);
    expect((await call('DELETE', '/api/users/me', alice.access_token, { password: PASSWORD })).status).toBe(
      204,
    );
    const left = await queryRows(app().db, 'select 1 from notifications where user_id = ?', [alice.user.id]);
    expect(left).toEqual([]);
  });
});
