import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { requestedPayout, sent } from '../economy/rest.js';
import { bearer, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { ConsoleClient } from './console-client.js';

/** The console's payout page over inject: its decision forms, as a browser submits them. */
describe('the console’s payout page', () => {
  const app = useTestApp();
  const admin = async () => {
    const tokens = await registerWithRole(app(), 'admin');
    return { tokens, console: await new ConsoleClient(app()).signedIn(tokens.user.username) };
  };
  /** The fields of the page's form that makes `button` on this payout, as the browser would post them. */
  const formOf = (page: string, payoutId: string, button: string) => {
    const form = [...page.matchAll(/<form method="post" action="([^"]+)"[\s\S]*?<\/form>/g)].find(
      (match) =>
        match[1] === `/console/economy/payouts/${payoutId}` && match[0].includes(`>${button}</button>`),
    );
    if (!form) throw new Error(`no ${button} form for payout ${payoutId}`);
    const fields = [...form[0].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)];
    return { action: form[1] as string, fields: Object.fromEntries(fields.map((f) => [f[1], f[2]])) };
  };
  const payoutState = async (viewer: TokenResponse, payoutId: string) =>
    (
      await app().http.inject({
        method: 'GET',
        url: `/api/economy/payouts/${payoutId}`,
        headers: bearer(viewer.access_token),
      })
    ).json().state;
  const creatorBalance = async (creator: TokenResponse) =>
    (
      await app().http.inject({
        method: 'GET',
        url: '/api/economy/creator/balance',
        headers: bearer(creator.access_token),
      })
    ).json();

  it('approves a payout with the page’s form, which sends the state the page showed', async () => {
    const { tokens, console: browser } = await admin();
    const { payoutId } = await requestedPayout(app(), tokens);
    const page = (await browser.get('/console/economy/payouts?state=requested')).body;
    const approve = formOf(page, payoutId, 'Approve');
    expect(approve.fields).toMatchObject({ state: 'approved', expected_state: 'requested' });
    const response = await browser.post(approve.action, approve.fields);
    expect(response.statusCode).toBe(303);
    expect(response.headers.location).toBe('/console/economy/payouts');
    expect((await browser.get('/console/economy/payouts')).body).toMatch(
      /class="flash notice" role="status">Payout of 1000 coin is now approved\./,
    );
    expect(await payoutState(tokens, payoutId)).toBe('approved');
  });

  it('shows a decision made on a page another admin’s decision outdated as the conflict, and moves nothing', async () => {
    const { tokens, console: browser } = await admin();
    const { creator, payoutId } = await requestedPayout(app(), tokens);
    const page = (await browser.get('/console/economy/payouts?state=requested')).body;
    const reject = formOf(page, payoutId, 'Reject');
    // Another admin approves the payout while this page is open.
    const other = await registerWithRole(app(), 'admin');
    await sent(app(), other, 'PATCH', `/api/economy/admin/payouts/${payoutId}`, {
      state: 'approved',
      expected_state: 'requested',
    });
    const response = await browser.post(reject.action, reject.fields);
    expect(response.statusCode).toBe(303);
    expect((await browser.get('/console/economy/payouts')).body).toMatch(
      /class="flash error" role="alert">Conflict: The payout is approved now, not requested/,
    );
    expect(await payoutState(tokens, payoutId)).toBe('approved');
    expect(await creatorBalance(creator)).toMatchObject({ available: 400, in_payout: 1000 });
  });
});
