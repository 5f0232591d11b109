import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { changeRole } from '../../src/modules/users/users.service.js';
import { statementsAtOnce } from '../../src/platform/batcher.js';
import { executeBound } from '../../src/platform/db.js';
import { bearer, PASSWORD, registerUser, uniqueUsername } from '../helpers/accounts.js';
import { statementBatches, useTestApp, whileTransactionOpen } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { PROCESS_TEST_TIMEOUT_MS, preparedDataDir, runCli } from '../helpers/service-process.js';

describe('user accounts', () => {
  const app = useTestApp();

  const count = async (sql: string, params: unknown[]) => {
    const rows = await queryRows<{ n: number }>(app().db, sql, params);
    return rows[0]?.n;
  };

  it('shows the signed-in account with its roles and presence fields', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await app().http.inject({
      method: 'GET',
      url: '/api/users/me',
      headers: bearer(access_token),
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      id: user.id,
      username: user.username,
      created_at: user.created_at,
      last_seen_at: null,
      status_message: null,
      roles: ['user'],
    });
  });

  it('reads the accounts of callers arriving while the reads are busy with one statement, each caller its own', async () => {
    const callers = await Promise.all(Array.from({ length: 8 }, () => registerUser(app())));
    const before = await statementBatches(app(), 'account_read');
    // The users table is locked meanwhile: the reads that may run at once wait on it, and so do
    // the others, for the statement after them.
    const busy = statementsAtOnce(app().db.poolSize);
    let reading: Promise<{ statusCode: number; json(): { id: string; username: string } }[]> | undefined;
    await whileTransactionOpen(
      app,
      (tx) => executeBound(tx, 'lock table users in access exclusive mode', []),
      () => {
        reading = Promise.all(
          callers.map(({ access_token }) =>
            app().http.inject({ method: 'GET', url: '/api/users/me', headers: bearer(access_token) }),
          ),
        );
      },
    );
    const answers = (await reading) ?? [];
    expect(answers.map((answer) => answer.statusCode)).toEqual(callers.map(() => 200));
    expect(answers.map((answer) => [answer.json().id, answer.json().username])).toEqual(
      callers.map(({ user }) => [user.id, user.username]),
    );
    const after = await statementBatches(app(), 'account_read');
    expect(after.calls - before.calls).toBe(callers.length);
    expect(after.statements - before.statements).toBe(Math.min(busy, callers.length) + 1);
  });

  it('answers /api/users/me without a token with 401 UNAUTHENTICATED', async () => {
    const response = await app().http.inject({ method: 'GET', url: '/api/users/me' });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it("shows another user's public view without private fields", async () => {
    const viewer = await registerUser(app());
    const target = await registerUser(app());
    const response = await app().http.inject({
      method: 'GET',
      url: `/api/users/${target.user.id}`,
      headers: bearer(viewer.access_token),
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(target.user);
  });

  it.each([
    ['an unknown id', '01a1ffb2-0000-7000-8000-000000000000'],
    ['a malformed id', 'not-a-uuid'],
  ])('answers %s with 404 NOT_FOUND', async (_name, id) => {
    const viewer = await registerUser(app());
    const response = await app().http.inject({
      method: 'GET',
      url: `/api/users/${id}`,
      headers: bearer(viewer.access_token),
    });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('requires a token to see another user', async () => {
    const target = await registerUser(app());
    expect((await app().http.inject({ method: 'GET', url: `/api/users/${target.user.id}` })).statusCode).toBe(
      401,
    );
  });

  it('keeps the account when the password re-check fails, answering 403 PASSWORD_INCORRECT', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await app().http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(access_token),
      payload: { password: 'not the password' },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({ code: 'PASSWORD_INCORRECT' });
    expect(await count('select count(*)::int as n from users where id = ?', [user.id])).toBe(1);
  });

  it('answers a deletion without a password with 422 and keeps the account', async () => {
    const { user, access_token } = await registerUser(app());
    const response = await app().http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(access_token),
      payload: {},
    });
    expect(response.statusCode).toBe(422);
    expect(await count('select count(*)::int as n from users where id = ?', [user.id])).toBe(1);
  });

  it('deletes the account with its sessions; it can no longer log in, refresh or use its tokens', async () => {
    const username = uniqueUsername();
    const tokens = await registerUser(app(), username);
    const response = await app().http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(tokens.access_token),
      payload: { password: PASSWORD },
    });
    expect(response.statusCode).toBe(204);
    expect(await count('select count(*)::int as n from users where id = ?', [tokens.user.id])).toBe(0);
    expect(await count('select count(*)::int as n from sessions where user_id = ?', [tokens.user.id])).toBe(
      0,
    );

    const login = await app().http.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username, password: PASSWORD },
    });
    expect(login.statusCode).toBe(401);
    const refresh = await app().http.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      payload: { refresh_token: tokens.refresh_token },
    });
    expect(refresh.statusCode).toBe(401);
    const me = await app().http.inject({
      method: 'GET',
      url: '/api/users/me',
      headers: bearer(tokens.access_token),
    });
    expect(me.statusCode).toBe(401);
  });

  it("removes the account's friendships, follows and blocks in both directions and keeps the other user's rows", async () => {
    const leaving = await registerUser(app());
    const staying = await registerUser(app());
    const third = await registerUser(app());
    const execute = (sql: string, params: unknown[]) => queryRows(app().db, sql, params);
    const [l, s, t] = [leaving.user.id, staying.user.id, third.user.id];
    await execute(
      `insert into friendships (requester_id, addressee_id, status) values (?, ?, 'accepted'), (?, ?, 'pending')`,
      [l, s, t, l],
    );
    await execute('insert into follows (follower_id, followed_id) values (?, ?), (?, ?), (?, ?)', [
      l,
      s,
      s,
      l,
      s,
      t,
    ]);
    await execute('insert into blocks (blocker_id, blocked_id) values (?, ?), (?, ?)', [l, t, s, t]);
    const response = await app().http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(leaving.access_token),
      payload: { password: PASSWORD },
    });
    expect(response.statusCode).toBe(204);
    const involving = (table: string, a: string, b: string) =>
      count(`select count(*)::int as n from ${table} where ${a} = ? or ${b} = ?`, [l, l]);
    expect(await involving('friendships', 'requester_id', 'addressee_id')).toBe(0);
    expect(await involving('follows', 'follower_id', 'followed_id')).toBe(0);
    expect(await involving('blocks', 'blocker_id', 'blocked_id')).toBe(0);
    expect(await count('select count(*)::int as n from follows where follower_id = ?', [s])).toBe(1);
    expect(await count('select count(*)::int as n from blocks where blocker_id = ?', [s])).toBe(1);
  });

  it('frees the username of a deleted account for a new registration', async () => {
    const username = uniqueUsername();
    const tokens = await registerUser(app(), username);
    await app().http.inject({
      method: 'DELETE',
      url: '/api/users/me',
      headers: bearer(tokens.access_token),
      payload: { password: PASSWORD },
    });
    const again = await registerUser(app(), username);
    expect(again.user.id).not.toBe(tokens.user.id);
  });
});

describe('role administration', () => {
  const app = useTestApp();

  it('grants and revokes a role by username, case-insensitively, keeping the roles in a fixed order', async () => {
    const { user } = await registerUser(app());
    const data = () => app().db.data;
    expect(await changeRole(data(), user.username.toUpperCase(), 'admin', 'grant')).toEqual([
      'user',
      'admin',
    ]);
    expect(await changeRole(data(), user.username, 'moderator', 'grant')).toEqual([
      'user',
      'moderator',
      'admin',
    ]);
    expect(await changeRole(data(), user.username, 'moderator', 'grant')).toEqual([
      'user',
      'moderator',
      'admin',
    ]);
    expect(await changeRole(data(), user.username, 'admin', 'revoke')).toEqual(['user', 'moderator']);
  });

  it.each([
    ['an unknown role', 'x', 'owner', 'grant', /Unknown role owner/],
    ['the base user role', 'x', 'user', 'revoke', /keeps the user role/],
    ['an unknown username', 'nobody_here', 'admin', 'grant', /No user named nobody_here/],
  ] as const)('refuses %s', async (_name, who, role, change, message) => {
    const { user } = await registerUser(app());
    const username = who === 'x' ? user.username : who;
    await expect(changeRole(app().db.data, username, role, change)).rejects.toThrow(message);
  });

  it(
    'reports CLI usage mistakes with exit code 2 and unknown users with exit code 1',
    async () => {
      const dataDir = await preparedDataDir('atrium-admin-');
      try {
        const run = (...args: string[]) => runCli(['admin', ...args], { DATA_DIR: dataDir });
        const usage = run('promote', 'someone');
        expect(usage.status).toBe(2);
        expect(usage.stderr).toContain('Usage: atrium admin grant|revoke <username> <role>');
        const unknown = run('grant', 'ghost_user', 'moderator');
        expect(unknown.status).toBe(1);
        expect(unknown.stderr.trim()).toBe('No user named ghost_user.');
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
