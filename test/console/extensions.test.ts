import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { ConsoleClient } from './console-client.js';

const KIT = fileURLToPath(new URL('../extensions/fixtures/kit.mjs', import.meta.url));

/** The counts of one row of the extensions page (`kind` as the page words it), or undefined without that row. */
function countsOf(page: string, kind: string, name: string) {
  const row = new RegExp(
    `<tr><td>${kind}</td><td><code class="id">${name.replaceAll('.', '\\.')}</code></td><td>([^<]*)</td>\\s*` +
      '<td class="num">(\\d+)</td><td class="num">(\\d+)</td><td class="num">(\\d+)</td><td class="num">(\\d+)</td></tr>',
  ).exec(page);
  if (!row) return undefined;
  const [, auth, ok, refused, error, timeout] = row;
  return { auth, ok: Number(ok), refused: Number(refused), error: Number(error), timeout: Number(timeout) };
}

/** The console's Extensions page: what each loaded extension registered, and its calls by outcome. */
describe('the operator console’s extensions page', () => {
  const app = useTestApp({ EXTENSIONS: KIT, EXTENSION_TIMEOUT_MS: 300 });
  let admin: ConsoleClient;
  let alice: TokenResponse;
  const rpc = (name: string, payload?: unknown) =>
    app().http.inject({
      method: 'POST',
      url: `/api/rpc/${name}`,
      headers: bearer(alice.access_token),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });

  beforeAll(async () => {
    const tokens = await registerWithRole(app(), 'admin');
    admin = await new ConsoleClient(app()).signedIn(tokens.user.username);
    alice = await registerUser(app());
  });

  it('lists each loaded extension with its path, its rpcs with their auth, its hooks and its event handlers', async () => {
    const page = await admin.get('/console/extensions');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<h2 id="extension-kit">kit</h2>');
    expect(page.body).toContain(`<code>${KIT}</code>`);
    expect(countsOf(page.body, 'rpc', 'echo')?.auth).toBe('public');
    expect(countsOf(page.body, 'rpc', 'double')?.auth).toBe('user');
    expect(countsOf(page.body, 'rpc', 'match.result')?.auth).toBe('server');
    expect(countsOf(page.body, 'before hook', 'profile.update')).toMatchObject({ auth: '—', ok: 0 });
    expect(countsOf(page.body, 'after hook', 'profile.update')).toBeDefined();
    expect(countsOf(page.body, 'event handler', 'dm.message')).toBeDefined();
    expect(page.body).toContain('href="/console/extensions" aria-current="page"');
  });

  it('shows the calls of each rpc by outcome: ok, refused, error and timeout', async () => {
    expect((await rpc('double', { count: 1 })).statusCode).toBe(200);
    expect((await rpc('double', { count: 2 })).statusCode).toBe(200);
    expect((await rpc('refuse')).statusCode).toBe(403);
    expect((await rpc('boom')).statusCode).toBe(500);
    expect((await rpc('slow')).statusCode).toBe(503);
    const page = (await admin.get('/console/extensions')).body;
    expect(countsOf(page, 'rpc', 'double')).toEqual({
      auth: 'user',
      ok: 2,
      refused: 0,
      error: 0,
      timeout: 0,
    });
    expect(countsOf(page, 'rpc', 'refuse')).toMatchObject({ ok: 0, refused: 1 });
    expect(countsOf(page, 'rpc', 'boom')).toMatchObject({ ok: 0, error: 1 });
    expect(countsOf(page, 'rpc', 'slow')).toMatchObject({ ok: 0, timeout: 1 });
  });

  it('counts a hook’s calls with its operation, and an event handler’s once the event was handled', async () => {
    const bob = await registerUser(app());
    const sent = await app().http.inject({
      method: 'POST',
      url: `/api/chat/dm/${bob.user.id}/messages`,
      headers: bearer(alice.access_token),
      payload: { body: 'counted' },
    });
    expect(sent.statusCode, sent.body).toBe(201);
    expect(countsOf((await admin.get('/console/extensions')).body, 'before hook', 'dm.send')?.ok).toBe(1);
    await expect
      .poll(
        async () =>
          countsOf((await admin.get('/console/extensions')).body, 'event handler', 'dm.message')?.ok,
        {
          timeout: 10_000,
        },
      )
      .toBe(1);
  });

  it('refuses a moderator with a 403 page and leaves the page out of their navigation', async () => {
    const moderator = await registerWithRole(app(), 'moderator');
    const browser = await new ConsoleClient(app()).signedIn(moderator.user.username);
    expect((await browser.get('/console/extensions')).statusCode).toBe(403);
    expect((await browser.get('/console')).body).not.toContain('href="/console/extensions"');
  });
});
