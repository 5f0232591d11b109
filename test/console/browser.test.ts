import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { recordingCommand } from '../gameservers/gameservers.js';
import { groupCalls } from '../groups/groups.js';
import { bearer, login, PASSWORD, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { chromiumPath, requireChromium } from '../helpers/chromium.js';
import { queryRows } from '../helpers/database.js';
import { PROCESS_TEST_TIMEOUT_MS } from '../helpers/service-process.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';
import { authedSocket } from '../helpers/ws-client.js';
import { moderationCalls } from '../moderation/moderation.js';

/**
 * The operator console in headless Chromium (one launch for the file): signing in, a moderator
 * resolving a report and finding it in the audit log, a plain user refused, a form without its
 * CSRF token refused, an admin approving a payout, granting a role and suspending an account
 * (whose socket closes), and every page at 1280 and 390 px wide, photographed.
 *
 * Screenshots go to test-artifacts/console/ (gitignored). `npm run docs:console` runs this file
 * with CONSOLE_SCREENSHOT_DIR=docs/console, which writes the 1280 px pages docs/console.md shows.
 */

const docsDir = process.env.CONSOLE_SCREENSHOT_DIR;
const shotsDir = docsDir ?? join('test-artifacts', 'console');
const DEADLINE_MS = 20_000;
// An extension with rpcs, hooks and an event handler, so the extensions page has rows to draw.
const KIT = fileURLToPath(new URL('../extensions/fixtures/kit.mjs', import.meta.url));

requireChromium('the operator console', 'console/browser.test.ts');

describe.skipIf(!chromiumPath)('the operator console in headless Chromium', () => {
  // Samples are taken by the test, between bursts of traffic, so the charts have a shape.
  const { command } = recordingCommand();
  const app = useTestApp({
    CONSOLE_SAMPLE_INTERVAL_SECONDS: 3600,
    GAMESERVER_COMMAND: command,
    EXTENSIONS: KIT,
  });
  const mod = moderationCalls(app);
  const groups = groupCalls(app);
  let browser: Browser;
  let admin: TokenResponse;
  let moderator: TokenResponse;
  let payoutId: string;

  const send = async (token: string, method: 'POST' | 'PATCH', url: string, payload: object) => {
    const response = await app().http.inject({
      method,
      url,
      headers: { ...bearer(token), 'idempotency-key': randomUUID() },
      payload,
    });
    expect(response.statusCode, response.body).toBeLessThan(300);
    return response.json();
  };

  /** A creator with sales released to `available`, who asks for a payout of 1000. */
  const requestedPayout = async (): Promise<string> => {
    const [seller, buyer] = [await registerUser(app()), await registerUser(app())];
    await send(admin.access_token, 'POST', '/api/economy/admin/grants', {
      user_id: buyer.user.id,
      amount: 10_000,
      reason: 'launch bonus',
    });
    const item = await send(seller.access_token, 'POST', '/api/economy/items', {
      name: 'Neon cape',
      asset_type: 'clothing',
      consumable: true,
    });
    await send(seller.access_token, 'PATCH', `/api/economy/items/${item.id}`, { state: 'published' });
    const listing = await send(seller.access_token, 'POST', '/api/economy/listings', {
      item_id: item.id,
      price: 2000,
    });
    const purchase = await send(buyer.access_token, 'POST', '/api/economy/purchases', {
      listing_id: listing.id,
    });
    await queryRows(app().db, `update purchases set hold_until = now() - interval '1 second' where id = ?`, [
      purchase.id,
    ]);
    await app().modules.economy.releaseDue();
    return (await send(seller.access_token, 'POST', '/api/economy/payouts', { amount: 1000 })).id;
  };

  /** An open report of a direct message with this body. */
  const reportedMessage = async (body: string, reason = 'spam') => {
    const [sender, victim] = [await registerUser(app()), await registerUser(app())];
    const messageId = await mod.directMessage(sender, victim, body);
    return mod.reported(victim, messageId, { reason });
  };

  /** A fresh browser profile (its own cookies) at a width. */
  const open = async (width = 1280): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser.newContext({ viewport: { width, height: 900 }, baseURL: app().httpUrl });
    context.setDefaultTimeout(DEADLINE_MS);
    return { context, page: await context.newPage() };
  };

  const signIn = async (page: Page, username: string) => {
    await page.goto('/console');
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Password').press('Enter');
    await page.waitForURL(/\/console$/);
  };

  const shoot = async (page: Page, name: string, width: number) => {
    if (docsDir && width !== 1280) return;
    await page.screenshot({
      path: join(shotsDir, width === 1280 ? `${name}.png` : `${name}-${width}.png`),
      fullPage: true,
    });
  };

  beforeAll(async () => {
    await mkdir(shotsDir, { recursive: true });
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    admin = await registerWithRole(app(), 'admin');
    moderator = await registerWithRole(app(), 'moderator');
    payoutId = await requestedPayout();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('a moderator signs in, resolves a report and sees it in the audit log', async () => {
    const report = await reportedMessage('visit cheap-coins.example for free coins', 'scam link');
    const { context, page } = await open();
    try {
      await signIn(page, moderator.user.username);
      await page.getByRole('navigation').getByRole('link', { name: 'Moderation queue' }).click();
      const card = page.locator('article', { hasText: 'cheap-coins.example' });
      await card.getByLabel('Note (optional)').fill('scam, account warned');
      await card.getByLabel('Also delete the message').check();
      await card.getByRole('button', { name: 'Decide' }).click();
      await expect
        .poll(() => page.locator('.flash.notice').textContent())
        .toContain('Report “scam link” resolved');
      expect(await mod.reportRow(report.id)).toMatchObject({
        state: 'resolved',
        note: 'scam, account warned',
      });
      expect(await mod.messageCount(report.message_id)).toBe(0);
      await page.getByRole('navigation').getByRole('link', { name: 'Audit log' }).click();
      const entry = page.locator('tr', { hasText: report.id });
      await expect.poll(() => entry.locator('td').nth(2).textContent()).toBe('moderation.reports.resolve');
      expect(await entry.locator('pre').last().textContent()).toContain('scam, account warned');
    } finally {
      await context.close();
    }
  });

  it('an admin grants a role', async () => {
    const target = await registerUser(app());
    const { context, page } = await open();
    try {
      await signIn(page, admin.user.username);
      await page.getByRole('navigation').getByRole('link', { name: 'Users' }).click();
      await page.getByLabel('Name or id').fill(target.user.username);
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByRole('link', { name: target.user.username }).click();
      await page.getByRole('button', { name: 'Grant moderator' }).click();
      await expect
        .poll(() => page.locator('.flash.notice').textContent())
        .toContain('now holds user, moderator');
      const account = await app().http.inject({
        method: 'GET',
        url: `/api/admin/users/${target.user.id}`,
        headers: bearer(admin.access_token),
      });
      expect(account.json().roles).toEqual(['user', 'moderator']);
    } finally {
      await context.close();
    }
  });

  it('suspending a user closes their open socket and refuses their login', async () => {
    const target = await registerUser(app());
    const socket = await authedSocket(app().wsUrl, target.access_token);
    const { context, page } = await open();
    try {
      await signIn(page, moderator.user.username);
      await page.goto(`/console/users/${target.user.id}`);
      await page.getByLabel('Reason').fill('raid spam');
      await page.getByLabel('Or for').selectOption('7 days');
      await page.getByRole('button', { name: 'Suspend', exact: true }).click();
      await expect.poll(() => page.locator('.flash.notice').textContent()).toContain('is suspended until');
      expect((await socket.closed).code).toBe(4403);
      const refused = await login(app(), target.user.username);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().code).toBe('ACCOUNT_SUSPENDED');
    } finally {
      socket.close();
      await context.close();
    }
  });

  it('refuses a plain user with a 403 page', async () => {
    const user = await registerUser(app());
    const { context, page } = await open();
    try {
      await page.goto('/console/sign-in');
      await page.getByLabel('Username').fill(user.user.username);
      await page.getByLabel('Password').fill(PASSWORD);
      const [answer] = await Promise.all([
        page.waitForResponse(
          (response) => response.url().endsWith('/console/sign-in') && response.request().method() === 'POST',
        ),
        page.getByRole('button', { name: 'Sign in' }).click(),
      ]);
      expect(answer.status()).toBe(403);
      await expect.poll(() => page.locator('h1').textContent()).toBe('Not an operator');
      await shoot(page, 'refused', 1280);
      expect((await context.cookies()).map((cookie) => cookie.name)).not.toContain('atrium_console');
    } finally {
      await context.close();
    }
  });

  it('refuses a form posted without its CSRF token and changes nothing', async () => {
    const report = await reportedMessage('this one stays open');
    const { context, page } = await open();
    try {
      await signIn(page, moderator.user.username);
      await page.goto('/console/moderation');
      const card = page.locator('article', { hasText: 'this one stays open' });
      // This file has no DOM types: the element is typed by the one method used.
      await card.locator('input[name="_csrf"]').evaluate((input: { remove(): void }) => input.remove());
      await card.getByRole('button', { name: 'Decide' }).click();
      await expect.poll(() => page.locator('h1').textContent()).toBe('Form refused');
      expect(await mod.reportRow(report.id)).toMatchObject({ state: 'open' });
    } finally {
      await context.close();
    }
  });

  it('lets an admin approve a payout, showing progress while it runs', async () => {
    const { context, page } = await open();
    try {
      await signIn(page, admin.user.username);
      await page.goto('/console/economy/payouts');
      // A listener after console.js's keeps the first submission on the page, to look at its progress.
      await page.evaluate(
        "window.addEventListener('submit', (event) => event.preventDefault(), { once: true })",
      );
      const approve = page.getByRole('button', { name: 'Approve' }).first();
      await approve.click();
      expect(await page.locator('.progress[role="status"]').textContent()).toBe('Deciding…');
      expect(await page.locator('button[aria-busy="true"]').textContent()).toBe('Approve');
      await page.reload();
      await page.getByRole('button', { name: 'Approve' }).first().click();
      await expect.poll(() => page.locator('.flash.notice').textContent()).toContain('is now approved');
      const payout = await app().http.inject({
        method: 'GET',
        url: `/api/economy/payouts/${payoutId}`,
        headers: bearer(admin.access_token),
      });
      expect(payout.json().state).toBe('approved');
    } finally {
      await context.close();
    }
  });

  it('reaches the skip link first and the navigation by keyboard', async () => {
    const { context, page } = await open();
    try {
      await signIn(page, admin.user.username);
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to content');
      await page.keyboard.press('Enter');
      expect(await page.evaluate('document.activeElement.id')).toBe('main');
    } finally {
      await context.close();
    }
  });

  it(
    'draws every page at 1280 and 390 px without the page scrolling sideways, and photographs it',
    async () => {
      await reportedMessage('<b>totally</b> normal message, promise', 'harassment');
      const owner = await registerUser(app());
      const member = await registerUser(app());
      const { worldId, mainRoomId } = await createWorld(app(), owner.access_token, { name: 'Harbour town' });
      for (const [x, precondition] of [
        [0, { 'if-none-match': '*' }],
        [1, { 'if-none-match': '*' }],
      ] as const) {
        const put = await app().http.inject({
          method: 'PUT',
          url: `/api/worlds/${worldId}/rooms/${mainRoomId}/chunks/${x}/0/0`,
          headers: {
            ...bearer(owner.access_token),
            'content-type': 'application/octet-stream',
            ...precondition,
          },
          payload: chunkBytes(`c${x}`, x),
        });
        expect(put.statusCode, put.body).toBe(200);
      }
      await send(owner.access_token, 'POST', `/api/worlds/${worldId}/servers`, {});
      const group = await groups.createGroup(owner, { name: 'Harbour builders', join_policy: 'open' });
      await groups.joined(member, group.id);
      // Calls of the extension's rpcs, so its page counts some of each outcome.
      for (const [name, payload] of [
        ['double', { count: 2 }],
        ['double', { count: 3 }],
        ['echo', { greeting: 'hello' }],
        ['refuse', undefined],
        ['boom', undefined],
      ] as const) {
        await app().http.inject({
          method: 'POST',
          url: `/api/rpc/${name}`,
          headers: bearer(member.access_token),
          ...(payload === undefined ? {} : { payload }),
        });
      }
      // Traffic between samples, so the overview's charts have something to draw.
      for (let round = 0; round < 6; round++) {
        for (let i = 0; i < 5 * (round + 1); i++) await app().http.inject({ method: 'GET', url: '/healthz' });
        await app().modules.console.samples.sample();
      }
      const pages: [string, string][] = [
        ['overview', '/console'],
        ['moderation', '/console/moderation'],
        ['economy', '/console/economy?verify=1&account=platform_issuance'],
        ['payouts', '/console/economy/payouts?state=approved'],
        ['configuration', '/console/configuration'],
        ['extensions', '/console/extensions'],
        ['users', '/console/users'],
        ['user', `/console/users/${moderator.user.id}`],
        ['worlds', '/console/worlds'],
        ['world', `/console/worlds/${worldId}`],
        ['game-servers', '/console/game-servers'],
        ['groups', '/console/groups'],
        ['group', `/console/groups/${group.id}`],
        ['audit', '/console/audit'],
      ];
      for (const width of [1280, 390]) {
        const { context, page } = await open(width);
        try {
          await page.goto('/console/sign-in');
          await shoot(page, 'sign-in', width);
          await signIn(page, admin.user.username);
          for (const [name, path] of pages) {
            const response = await page.goto(path);
            expect(response?.status(), path).toBe(200);
            const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
            expect(overflow, `${path} at ${width} px`).toBeLessThanOrEqual(0);
            await shoot(page, name, width);
          }
        } finally {
          await context.close();
        }
      }
      // Thirty page loads and screenshots in a real browser: a loaded machine takes minutes.
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
