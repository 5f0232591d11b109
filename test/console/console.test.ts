import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { moderationCalls } from '../moderation/moderation.js';
import { ConsoleClient, setCookies } from './console-client.js';

/** The operator console over inject: sessions, cookies, CSRF, CSP, roles, escaping. */
describe('the operator console', () => {
  const app = useTestApp();
  const mod = moderationCalls(app);
  const client = () => new ConsoleClient(app());
  const operator = async (role: 'moderator' | 'admin') => {
    const tokens = await registerWithRole(app(), role);
    return { tokens, console: await client().signedIn(tokens.user.username) };
  };
  /** An open report of a direct message whose body is `body`. */
  const openReport = async (body = 'buy cheap coins') => {
    const [sender, victim] = [await registerUser(app()), await registerUser(app())];
    const messageId = await mod.directMessage(sender, victim, body);
    const report = await mod.reported(victim, messageId, { reason: 'spam' });
    return { report, messageId };
  };

  it('sends a signed-out visitor to the sign-in page', async () => {
    const response = await client().get('/console');
    expect(response.statusCode).toBe(303);
    expect(response.headers.location).toBe('/console/sign-in');
  });

  it('sets an HttpOnly, SameSite=Strict session cookie scoped to /console, not Secure over plain HTTP', async () => {
    const tokens = await registerWithRole(app(), 'moderator');
    const browser = client();
    const response = await browser.signIn(tokens.user.username);
    expect(response.statusCode).toBe(303);
    const session = setCookies(response).find((cookie) => cookie.startsWith('atrium_console='));
    expect(session).toMatch(/; Path=\/console; Max-Age=3600; HttpOnly; SameSite=Strict$/);
    expect(session).not.toMatch(/Secure/);
  });

  it('answers every page with a CSP that allows no inline script or style, and no inline script or style in the page', async () => {
    const { console: browser } = await operator('admin');
    for (const path of [
      '/console',
      '/console/moderation',
      '/console/economy',
      '/console/economy/payouts',
      '/console/configuration',
      '/console/extensions',
      '/console/users',
      '/console/worlds',
      '/console/game-servers',
      '/console/groups',
      '/console/audit',
      '/console/sign-in',
    ]) {
      const response = await browser.get(path);
      const csp = String(response.headers['content-security-policy']);
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).toContain("style-src 'self'");
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(response.headers['x-frame-options']).toBe('DENY');
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body, path).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>|\sstyle=|<style/);
    }
  });

  it('refuses a plain user with a 403 page and no session, and ends the API session it signed in', async () => {
    const user = await registerUser(app());
    const browser = client();
    const response = await browser.signIn(user.user.username);
    expect(response.statusCode).toBe(403);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.body).toContain('does not hold the moderator or admin role');
    expect(browser.cookies.has('atrium_console')).toBe(false);
    expect((await browser.get('/console')).statusCode).toBe(303);
  });

  it('shows a wrong password as the API’s problem, with the submitted username escaped', async () => {
    const browser = client();
    const response = await browser.signIn('<script>alert(1)</script>', 'wrong password');
    expect([401, 422]).toContain(response.statusCode);
    expect(response.body).not.toContain('<script>alert(1)</script>');
    expect(response.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('refuses a sign-in form without its double-submit token', async () => {
    const tokens = await registerWithRole(app(), 'admin');
    const browser = client();
    await browser.get('/console/sign-in');
    const response = await browser.post('/console/sign-in', {
      username: tokens.user.username,
      password: 'x',
      _csrf: 'forged',
    });
    expect(response.statusCode).toBe(403);
    expect(browser.cookies.has('atrium_console')).toBe(false);
  });

  it('shows reported text escaped, never as markup', async () => {
    const { console: browser } = await operator('moderator');
    await openReport('<script>alert("pwned")</script><img src=x onerror=alert(1)>');
    const page = await browser.get('/console/moderation');
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('<script>alert("pwned")');
    expect(page.body).not.toContain('<img src=x');
    expect(page.body).toContain(
      '&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;',
    );
  });

  it('resolves a report through the API and deletes its message when asked', async () => {
    const { console: browser } = await operator('moderator');
    const { report, messageId } = await openReport();
    const response = await browser.post(`/console/moderation/reports/${report.id}`, {
      state: 'resolved',
      note: 'spam link',
      delete_message: 'true',
    });
    expect(response.statusCode).toBe(303);
    expect(response.headers.location).toBe('/console/moderation');
    expect(await mod.reportRow(report.id)).toMatchObject({ state: 'resolved', note: 'spam link' });
    expect(await mod.messageCount(messageId)).toBe(0);
    expect((await browser.get('/console/moderation')).body).toContain(
      'Report “spam” resolved; its message is deleted.',
    );
  });

  it('refuses a form without the session’s CSRF token, or from another origin, and changes nothing', async () => {
    const { console: browser } = await operator('moderator');
    const { report } = await openReport();
    const url = `/console/moderation/reports/${report.id}`;
    // One character changed: the token's own last character must not be the one put in its place.
    const forged = `${browser.csrf.slice(0, -1)}${browser.csrf.endsWith('A') ? 'B' : 'A'}`;
    for (const response of [
      await browser.post(url, { state: 'dismissed', _csrf: '' }),
      await browser.post(url, { state: 'dismissed', _csrf: forged }),
      await browser.post(url, { state: 'dismissed' }, { origin: 'https://evil.example' }),
      await browser.post(url, { state: 'dismissed' }, { 'sec-fetch-site': 'cross-site' }),
    ]) {
      expect(response.statusCode).toBe(403);
      expect(response.body).toContain('Nothing was changed');
    }
    expect(await mod.reportRow(report.id)).toMatchObject({ state: 'open' });
  });

  it('shows the API’s problem detail when an action is refused', async () => {
    const { console: browser } = await operator('moderator');
    const { report } = await openReport();
    await browser.post(`/console/moderation/reports/${report.id}`, { state: 'dismissed' });
    const again = await browser.post(`/console/moderation/reports/${report.id}`, { state: 'resolved' });
    expect(again.statusCode).toBe(303);
    const page = await browser.get('/console/moderation');
    expect(page.body).toMatch(
      /class="flash error" role="alert">Conflict: [^<]*already resolved or dismissed/,
    );
  });

  it('gives a moderator a 403 page for the admins’ pages and actions, and moves no money', async () => {
    const { console: browser } = await operator('moderator');
    const target = await registerUser(app());
    expect((await browser.get('/console/economy')).statusCode).toBe(403);
    expect((await browser.get('/console/configuration')).statusCode).toBe(403);
    const grant = await browser.post('/console/economy/grants', {
      idempotency_key: 'k-1',
      user_id: target.user.id,
      amount: '50',
      reason: 'no',
    });
    expect(grant.statusCode).toBe(403);
    const wallet = await app().http.inject({
      method: 'GET',
      url: '/api/economy/wallet',
      headers: bearer(target.access_token),
    });
    expect(wallet.json().balance).toBe(0);
    const nav = (await browser.get('/console')).body;
    expect(nav).toContain('href="/console/moderation"');
    expect(nav).not.toContain('href="/console/economy"');
  });

  it('grants once for a form submitted twice (its Idempotency-Key), and shows a refused amount’s field', async () => {
    const { console: browser } = await operator('admin');
    const target = await registerUser(app());
    const form = {
      idempotency_key: 'console-grant-1',
      user_id: target.user.id,
      amount: '75',
      reason: 'welcome',
    };
    expect((await browser.post('/console/economy/grants', form)).statusCode).toBe(303);
    expect((await browser.post('/console/economy/grants', form)).statusCode).toBe(303);
    const wallet = await app().http.inject({
      method: 'GET',
      url: '/api/economy/wallet',
      headers: bearer(target.access_token),
    });
    expect(wallet.json().balance).toBe(75);
    await browser.post('/console/economy/grants', {
      ...form,
      idempotency_key: 'console-grant-2',
      amount: '-3',
    });
    expect((await browser.get('/console/economy')).body).toContain('body.amount');
  });

  it('shows the configuration in force with DATABASE_URL’s password withheld', async () => {
    const { console: browser } = await operator('admin');
    const page = await browser.get('/console/configuration');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('ECONOMY_FEE_BPS');
    expect(page.body).not.toMatch(/postgres(ql)?:\/\/[^"<]*:[^"<@[]+@/);
  });

  it('says on the extensions page that none are loaded when EXTENSIONS names none', async () => {
    const { console: browser } = await operator('admin');
    const page = await browser.get('/console/extensions');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('No extensions are loaded');
  });

  it('refreshes an expired access token behind the page, rotating the stored refresh token', async () => {
    const { tokens, console: browser } = await operator('moderator');
    const key = `console:session:${createHash('sha256')
      .update(browser.cookies.get('atrium_console') ?? '')
      .digest('base64url')}`;
    const stored = JSON.parse((await app().kv.get(key)) ?? '{}');
    await app().kv.set(key, JSON.stringify({ ...stored, accessExpiresAt: 0 }), { ttlMs: 60_000 });
    expect((await browser.get('/console/moderation')).statusCode).toBe(200);
    const after = JSON.parse((await app().kv.get(key)) ?? '{}');
    expect(after.refreshToken).not.toBe(stored.refreshToken);
    expect(after.accessExpiresAt).toBeGreaterThan(Date.now());
    expect(tokens.user.username).toBe(after.username);
  });

  it('signs out: the cookie is cleared and the session’s refresh token no longer works', async () => {
    const { console: browser } = await operator('moderator');
    const key = `console:session:${createHash('sha256')
      .update(browser.cookies.get('atrium_console') ?? '')
      .digest('base64url')}`;
    const { refreshToken } = JSON.parse((await app().kv.get(key)) ?? '{}');
    const response = await browser.post('/console/sign-out', {});
    expect(response.statusCode).toBe(303);
    expect(browser.cookies.has('atrium_console')).toBe(false);
    expect(await app().kv.get(key)).toBeNull();
    const refresh = await app().http.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      payload: { refresh_token: refreshToken },
    });
    expect(refresh.statusCode).toBe(401);
  });

  it('shows the nodes and their rates on the overview once a sample is taken', async () => {
    const { console: browser } = await operator('moderator');
    await app().modules.console.samples.sample();
    const page = await browser.get('/console');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(app().modules.console.samples.nodeId.slice(0, 8));
    expect(page.body).toMatch(/<dt>Nodes<\/dt><dd>[1-9]/);
  });

  it('answers a form body over the console’s limit with 413 and an unknown console path with 404', async () => {
    const { console: browser } = await operator('moderator');
    expect((await browser.post('/console/sign-out', { pad: 'x'.repeat(20_000) })).statusCode).toBe(413);
    expect((await browser.get('/console/nowhere')).statusCode).toBe(404);
  });
});

describe('the operator console behind a TLS-terminating proxy', () => {
  const app = useTestApp({ TRUST_PROXY: 'loopback' });

  it('marks the session cookie Secure when a trusted proxy says the request came over HTTPS', async () => {
    const tokens: TokenResponse = await registerWithRole(app(), 'moderator');
    const browser = new ConsoleClient(app(), 'https://localhost:80');
    await browser.get('/console/sign-in');
    const response = await browser.post(
      '/console/sign-in',
      { username: tokens.user.username, password: 'correct horse battery' },
      { origin: 'https://localhost:80', 'x-forwarded-proto': 'https' },
    );
    expect(response.statusCode).toBe(303);
    const session = setCookies(response).find((cookie) => cookie.startsWith('atrium_console='));
    expect(session).toMatch(/; Secure$/);
  });
});
