import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Notification } from '../../protocol/notifications.js';
import type { NotificationsApi } from '../../src/modules/notifications/index.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { ConsoleClient } from './console-client.js';

/** The text of the flash a page shows after a form, or undefined without one. */
const flashOf = (page: string) => /class="flash (?:notice|error)" role="\w+">([^<]*)</.exec(page)?.[1];

/**
 * The console's broadcast form over inject: a notification to the users listed or to everyone,
 * the API's refusals shown as every console form shows them, and admins only.
 */
describe('the console’s broadcast page', () => {
  const app = useTestApp();
  let admin: TokenResponse;
  let browser: ConsoleClient;
  beforeAll(async () => {
    admin = await registerWithRole(app(), 'admin');
    browser = await new ConsoleClient(app()).signedIn(admin.user.username);
  });
  const inbox = async (user: TokenResponse) =>
    (
      await app().http.inject({
        method: 'GET',
        url: '/api/notifications',
        headers: bearer(user.access_token),
      })
    ).json().items as Notification[];
  const send = async (fields: Record<string, string>) => {
    const answer = await browser.post('/console/broadcast/send', fields);
    expect([answer.statusCode, answer.headers.location]).toEqual([303, '/console/broadcast']);
    const page = await browser.get('/console/broadcast');
    expect(page.statusCode).toBe(200);
    return flashOf(page.body);
  };

  it('notifies the users listed one per line or separated by commas, with the content typed as JSON', async () => {
    const form = await browser.get('/console/broadcast');
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('action="/console/broadcast/send"');
    expect(form.body).toContain('<textarea id="broadcast-user-ids" name="user_ids"');
    const [alice, bob, carol, dave] = await Promise.all(Array.from({ length: 4 }, () => registerUser(app())));
    const flash = await send({
      to: 'users',
      user_ids: `${alice?.user.id}\n${bob?.user.id}, ${carol?.user.id},\n`,
      code: 'maintenance.scheduled',
      subject: 'Down at noon',
      content: '{"starts_at": "2030-01-01T12:00:00Z"}',
    });
    expect(flash).toMatch(/^Broadcast \S+ accepted\.$/);
    for (const user of [alice, bob, carol]) {
      expect(await inbox(user as TokenResponse)).toMatchObject([
        {
          code: 'maintenance.scheduled',
          subject: 'Down at noon',
          content: { starts_at: '2030-01-01T12:00:00Z' },
          sender_id: null,
        },
      ]);
    }
    expect(await inbox(dave as TokenResponse)).toEqual([]);
  });

  it('broadcasts to everyone when chosen, without content', async () => {
    const user = await registerUser(app());
    expect(await send({ to: 'all', user_ids: '', code: 'news.everyone', subject: 'Hello everyone' })).toMatch(
      /^Broadcast \S+ accepted\.$/,
    );
    await (app().modules as unknown as { notifications: NotificationsApi }).notifications.runBroadcasts();
    expect(await inbox(user)).toMatchObject([
      { code: 'news.everyone', subject: 'Hello everyone', content: {} },
    ]);
  });

  it('shows the API’s refusals naming the fields, refuses content that is not JSON itself, and sends nothing', async () => {
    const user = await registerUser(app());
    const fields = { to: 'users', user_ids: user.user.id, code: 'news.refused', subject: 'Refused' };
    expect(await send({ ...fields, code: 'Not A Code' })).toMatch(
      /^Unprocessable Content: .*\(body\.code must be a dotted lower-case name/,
    );
    expect(await send({ ...fields, user_ids: ' ,\n' })).toMatch(
      /^Unprocessable Content: .*\(body\.user_ids /,
    );
    // Ids typed with "everyone" chosen: the API refuses the two together.
    expect(await send({ ...fields, to: 'all' })).toMatch(
      /^Unprocessable Content: .*send exactly one of user_ids or all: true/,
    );
    expect(await send({ ...fields, content: '[1, 2]' })).toMatch(
      /^Unprocessable Content: .*\(body\.content /,
    );
    expect(await send({ ...fields, content: '{"unclosed": ' })).toMatch(
      /^Nothing was sent: the content is not JSON \(/,
    );
    expect(await inbox(user)).toEqual([]);
  });

  it('refuses a moderator the page and the form with a 403 page, sends nothing, and leaves it out of the navigation', async () => {
    const [moderator, user] = [await registerWithRole(app(), 'moderator'), await registerUser(app())];
    const mod = await new ConsoleClient(app()).signedIn(moderator.user.username);
    const page = await mod.get('/console/broadcast');
    expect(page.statusCode).toBe(403);
    expect(page.body).toContain('Your roles do not open this page.');
    expect((await mod.get('/console')).body).not.toContain('href="/console/broadcast"');
    const refused = await mod.post('/console/broadcast/send', {
      to: 'users',
      user_ids: user.user.id,
      code: 'news.sneaky',
      subject: 'Sneaky',
    });
    expect(refused.statusCode).toBe(403);
    expect(await inbox(user)).toEqual([]);
    expect((await browser.get('/console/broadcast')).body).toContain(
      'href="/console/broadcast" aria-current="page"',
    );
  });
});
