import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, startDevServer } from '../../examples/web-client/dev-server.js';
import { useTestApp } from '../helpers/app.js';
import { chromiumPath, requireChromium } from '../helpers/chromium.js';

/**
 * examples/web-client in a real browser: headless Chromium runs the page against a real app,
 * through @atrium/client bundled for browsers (Chromium as test/helpers/chromium.ts finds it).
 */

const STEPS = ['registered', 'connected', 'presence-seen', 'dm-received', 'chunks-loaded'];
const PAGE_DEADLINE_MS = 20_000;

const executablePath = chromiumPath;
requireChromium('the web client example', 'browser.test.ts');

describe.skipIf(!executablePath)('the web client example in headless Chromium', () => {
  const app = useTestApp();
  let server: DevServer;
  let browser: Browser;

  beforeAll(async () => {
    server = await startDevServer({ atriumHttpUrl: app().httpUrl, atriumWsUrl: app().wsUrl, port: 0 });
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('registers two users, sees presence, exchanges a direct message and loads chunks', async () => {
    const page = await browser.newPage();
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));

    await page.goto(server.url);
    // The page's script runs in the browser, which this file has no DOM types for: hence the string.
    await page
      .waitForFunction("document.body.dataset.status !== 'running'", undefined, { timeout: PAGE_DEADLINE_MS })
      .catch(() => undefined);

    const status = await page.getAttribute('body', 'data-status');
    const steps = await Promise.all(
      (await page.locator('#steps li').all()).map((item) => item.getAttribute('data-step')),
    );
    const report = [
      `status ${status}`,
      `page log:\n${await page.textContent('#log')}`,
      `console errors:\n${consoleErrors.join('\n') || '(none)'}`,
    ].join('\n');
    expect(status, report).toBe('passed');
    expect(steps, report).toEqual(STEPS);
  });
});
