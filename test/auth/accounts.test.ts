import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { modules } from '../../src/modules/index.js';
import { changeRole } from '../../src/modules/users/users.service.js';
import { getMe, login, PASSWORD, registerUser, uniqueUsername } from '../helpers/accounts.js';
import { buildTestApp, type TestApp, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

const register = (app: TestApp, payload: Record<string, unknown>) =>
  app.http.inject({ method: 'POST', url: '/api/auth/register', payload });
const refresh = (app: TestApp, refreshToken: string) =>
  app.http.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refresh_token: refreshToken } });

async function usersNamed(app: TestApp, username: string): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    app.db,
    'select count(*)::int as n from users where lower(username) = lower(?)',
    [username],
  );
  return rows[0]?.n ?? -1;
}

describe('registration', () => {
  // The service's own modules: the suite's other apps hash passwords at argon2's minimum cost.
  const app = useTestApp({}, { modules });

  it('creates the account and returns a token pair with 201', async () => {
    const username = uniqueUsername('Ada');
    const response = await register(app(), {
      username,
      password: PASSWORD,
      accept_terms: true,
      confirm_18_plus: true,
    });
    expect(response.statusCode).toBe(201);
    const body = response.json() as TokenResponse;
    expect(body).toMatchObject({ user: { username }, token_type: 'Bearer', expires_in: 900 });
    expect(body.user.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(body.user.created_at)).not.toBeNaN();
    expect(body.access_token.split('.')).toHaveLength(3);
    expect(body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(response.body).not.toContain(PASSWORD);
    expect(response.body).not.toContain('argon2');
  });

  it('stores the password only as an argon2id hash with the documented parameters', async () => {
    const { user } = await registerUser(app());
    const rows = await queryRows<{ password_hash: string }>(
      app().db,
      'select password_hash from users where id = ?',
      [user.id],
    );
    expect(rows[0]?.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  });

  it('refuses an applicant who does not confirm being 18 or older with 422 AGE_GATE and writes nothing', async () => {
    const username = uniqueUsername();
    const response = await register(app(), {
      username,
      password: PASSWORD,
      accept_terms: true,
      confirm_18_plus: false,
    });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({ code: 'AGE_GATE', status: 422 });
    expect(await usersNamed(app(), username)).toBe(0);
  });

  it('refuses an applicant who does not accept the terms with 422 TERMS_NOT_ACCEPTED and writes nothing', async () => {
    const username = uniqueUsername();
    const response = await register(app(), {
      username,
      password: PASSWORD,
      accept_terms: false,
      confirm_18_plus: true,
    });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({ code: 'TERMS_NOT_ACCEPTED' });
    expect(await usersNamed(app(), username)).toBe(0);
  });

  it.each([
    ['a missing age confirmation', { confirm_18_plus: undefined }, 'body.confirm_18_plus'],
    ['a date of birth, which is never collected', { date_of_birth: '2000-01-01' }, 'body'],
    ['a two-character username', { username: 'ab' }, 'body.username'],
    ['a 33-character username', { username: 'a'.repeat(33) }, 'body.username'],
    ['a username with a space', { username: 'bad name' }, 'body.username'],
    ['a seven-character password', { password: 'short12' }, 'body.password'],
    ['a 257-character password', { password: 'p'.repeat(257) }, 'body.password'],
    ['an invalid email', { email: 'not-an-email' }, 'body.email'],
    ['a string where a boolean belongs', { accept_terms: 'true' }, 'body.accept_terms'],
  ])('answers %s with 422 VALIDATION_FAILED and writes nothing', async (_name, change, path) => {
    const username = uniqueUsername();
    const payload = { username, password: PASSWORD, accept_terms: true, confirm_18_plus: true, ...change };
    const response = await register(app(), payload);
    expect(response.statusCode).toBe(422);
    const body = response.json() as { code: string; errors: { path: string }[] };
    expect(body.code).toBe('VALIDATION_FAILED');
    expect(body.errors.map((e) => e.path)).toContain(path);
    expect(await usersNamed(app(), String(payload.username))).toBe(0);
  });

  it('answers a username taken in another letter case with 409 USERNAME_TAKEN', async () => {
    const username = uniqueUsername('Grace');
    await registerUser(app(), username);
    const response = await register(app(), {
      username: username.toUpperCase(),
      password: PASSWORD,
      accept_terms: true,
      confirm_18_plus: true,
    });
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({ code: 'USERNAME_TAKEN' });
    expect(await usersNamed(app(), username)).toBe(1);
  });

  it('answers an email taken in another letter case with 409 EMAIL_TAKEN', async () => {
    const email = `${uniqueUsername()}@example.com`;
    const first = await register(app(), {
      username: uniqueUsername(),
      password: PASSWORD,
      email,
      accept_terms: true,
      confirm_18_plus: true,
    });
    expect(first.statusCode).toBe(201);
    const second = await register(app(), {
      username: uniqueUsername(),
      password: PASSWORD,
      email: email.toUpperCase(),
      accept_terms: true,
      confirm_18_plus: true,
    });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ code: 'EMAIL_TAKEN' });
  });

  it('lets exactly one of several concurrent registrations of one name succeed', async () => {
    const username = uniqueUsername('race');
    const attempts = await Promise.all(
      ['', '', '', '', ''].map((_, i) =>
        register(app(), {
          username: i % 2 ? username.toUpperCase() : username,
          password: PASSWORD,
          accept_terms: true,
          confirm_18_plus: true,
        }),
      ),
    );
    const statuses = attempts.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409]);
    expect(await usersNamed(app(), username)).toBe(1);
  });
});

describe('login', () => {
  const app = useTestApp({
    LOGIN_MAX_FAILURES: 3,
    LOGIN_LOCKOUT_SECONDS: 1,
    LOGIN_IP_MAX_ATTEMPTS: 1000,
  });

  it('starts a session for the right password, matching the username case-insensitively', async () => {
    const username = uniqueUsername('Linus');
    const { user } = await registerUser(app(), username);
    const response = await login(app(), username.toUpperCase(), PASSWORD);
    expect(response.statusCode).toBe(200);
    const body = response.json() as TokenResponse;
    expect(body.user).toEqual(user);
    expect((await getMe(app(), body.access_token)).statusCode).toBe(200);
  });

  it('answers a wrong password and an unknown username identically with 401 INVALID_CREDENTIALS', async () => {
    const username = uniqueUsername();
    await registerUser(app(), username);
    const wrongPassword = await login(app(), username, 'not the password');
    const unknownUser = await login(app(), uniqueUsername(), 'not the password');
    expect(wrongPassword.statusCode).toBe(401);
    expect(unknownUser.statusCode).toBe(401);
    expect(wrongPassword.json()).toMatchObject({ code: 'INVALID_CREDENTIALS' });
    expect(unknownUser.body).toBe(wrongPassword.body);
  });

  it('answers a body without a password with 422', async () => {
    const response = await app().http.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: 'x' },
    });
    expect(response.statusCode).toBe(422);
  });

  it('locks a username after repeated failures, even for the right password, and recovers after the window', async () => {
    const username = uniqueUsername();
    await registerUser(app(), username);
    for (let i = 0; i < 3; i++) expect((await login(app(), username, 'wrong password')).statusCode).toBe(401);
    const locked = await login(app(), username, PASSWORD);
    expect(locked.statusCode).toBe(429);
    expect(locked.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(locked.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await login(app(), username, PASSWORD)).statusCode).toBe(200);
  });

  it('forgets earlier failures after a successful login', async () => {
    const username = uniqueUsername();
    await registerUser(app(), username);
    for (let i = 0; i < 2; i++) await login(app(), username, 'wrong password');
    expect((await login(app(), username, PASSWORD)).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) expect((await login(app(), username, 'wrong password')).statusCode).toBe(401);
    expect((await login(app(), username, PASSWORD)).statusCode).toBe(200);
  });
});

describe('login rate limit per address', () => {
  const app = useTestApp({ LOGIN_IP_MAX_ATTEMPTS: 3, LOGIN_IP_WINDOW_SECONDS: 60 });

  it('answers 429 with Retry-After once one address exceeds its attempts, while other addresses still log in', async () => {
    const username = uniqueUsername();
    await registerUser(app(), username);
    for (let i = 0; i < 3; i++)
      expect((await login(app(), username, PASSWORD, { remoteAddress: '10.1.1.1' })).statusCode).toBe(200);
    const limited = await login(app(), username, PASSWORD, { remoteAddress: '10.1.1.1' });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await login(app(), username, PASSWORD, { remoteAddress: '10.2.2.2' })).statusCode).toBe(200);
  });
});

describe('registration rate limit per address', () => {
  const app = useTestApp({ REGISTER_IP_MAX_ATTEMPTS: 2 });

  it('answers 429 once one address registers too often, and writes nothing for the refused attempt', async () => {
    const attempt = (username: string, remoteAddress: string) =>
      app().http.inject({
        method: 'POST',
        url: '/api/auth/register',
        remoteAddress,
        payload: { username, password: PASSWORD, accept_terms: true, confirm_18_plus: true },
      });
    expect((await attempt(uniqueUsername(), '10.3.3.3')).statusCode).toBe(201);
    expect((await attempt(uniqueUsername(), '10.3.3.3')).statusCode).toBe(201);
    const refusedName = uniqueUsername();
    const refused = await attempt(refusedName, '10.3.3.3');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect(await usersNamed(app(), refusedName)).toBe(0);
    expect((await attempt(uniqueUsername(), '10.4.4.4')).statusCode).toBe(201);
  });
});

describe('refresh and logout', () => {
  const app = useTestApp();

  it('rotates the refresh token and issues a new access token', async () => {
    const first = await registerUser(app());
    const response = await refresh(app(), first.refresh_token);
    expect(response.statusCode).toBe(200);
    const second = response.json() as TokenResponse;
    expect(second.user).toEqual(first.user);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await getMe(app(), second.access_token)).statusCode).toBe(200);
  });

  it('revokes the whole session, newest token included, when a rotated token is reused', async () => {
    const first = await registerUser(app());
    const second = (await refresh(app(), first.refresh_token)).json() as TokenResponse;
    const third = (await refresh(app(), second.refresh_token)).json() as TokenResponse;

    const reuse = await refresh(app(), first.refresh_token);
    expect(reuse.statusCode).toBe(401);
    expect(reuse.json()).toMatchObject({ code: 'INVALID_REFRESH_TOKEN' });
    expect((await refresh(app(), third.refresh_token)).statusCode).toBe(401);
    expect((await getMe(app(), third.access_token)).statusCode).toBe(401);
  });

  it('leaves the other sessions of the same user working after a reuse revokes one', async () => {
    const username = uniqueUsername();
    const phone = await registerUser(app(), username);
    const laptop = (await login(app(), username, PASSWORD)).json() as TokenResponse;
    await refresh(app(), phone.refresh_token);
    await refresh(app(), phone.refresh_token);
    expect((await refresh(app(), laptop.refresh_token)).statusCode).toBe(200);
  });

  it('lets exactly one of several concurrent refreshes of one token rotate it, the others counting as reuse', async () => {
    const first = await registerUser(app());
    const answers = await Promise.all(Array.from({ length: 4 }, () => refresh(app(), first.refresh_token)));
    const rotated = answers.filter((answer) => answer.statusCode === 200);
    expect(rotated).toHaveLength(1);
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 401, 401, 401]);
    // The others presented a spent token: the session is revoked, the winner's new token with it.
    const winner = rotated[0]?.json() as TokenResponse;
    expect((await refresh(app(), winner.refresh_token)).statusCode).toBe(401);
  });

  it.each([
    ['an unknown token', 'x'.repeat(43)],
    ['a token of the wrong shape', '!!!'],
  ])('answers %s with 401 INVALID_REFRESH_TOKEN', async (_name, token) => {
    const response = await refresh(app(), token);
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ code: 'INVALID_REFRESH_TOKEN' });
  });

  it('answers a missing or oversized refresh token with 422', async () => {
    expect(
      (await app().http.inject({ method: 'POST', url: '/api/auth/refresh', payload: {} })).statusCode,
    ).toBe(422);
    expect((await refresh(app(), 'x'.repeat(513))).statusCode).toBe(422);
  });

  it('logs out with 204, after which the refresh token no longer works, and is idempotent', async () => {
    const tokens = await registerUser(app());
    const logout = () =>
      app().http.inject({
        method: 'POST',
        url: '/api/auth/logout',
        payload: { refresh_token: tokens.refresh_token },
      });
    const first = await logout();
    expect(first.statusCode).toBe(204);
    expect(first.body).toBe('');
    expect((await refresh(app(), tokens.refresh_token)).statusCode).toBe(401);
    expect((await logout()).statusCode).toBe(204);
  });

  it('carries a role granted by an operator into the token issued at the next refresh', async () => {
    const tokens = await registerUser(app());
    await changeRole(app().db.data, tokens.user.username, 'moderator', 'grant');
    const refreshed = (await refresh(app(), tokens.refresh_token)).json() as TokenResponse;
    const body = (await getMe(app(), refreshed.access_token)).json() as { roles: string[] };
    expect(body.roles).toEqual(['user', 'moderator']);
  });
});

describe('refresh token expiry', () => {
  it('refuses a refresh token after its lifetime', async () => {
    const app = await buildTestApp({ REFRESH_TOKEN_TTL_SECONDS: 1 });
    try {
      const tokens = await registerUser(app);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expect((await refresh(app, tokens.refresh_token)).statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });
});
