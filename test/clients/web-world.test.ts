import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DevServer, startDevServer } from '../../examples/web-client/dev-server.js';
import { PASSWORD, uniqueUsername } from '../helpers/accounts.js';
import { chromiumPath, requireChromium } from '../helpers/chromium.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  PROCESS_TEST_TIMEOUT_MS,
  preparedDataDir,
  type ServiceProcess,
  startService,
} from '../helpers/service-process.js';

/**
 * examples/web-world in headless Chromium, two users in two browser contexts, against the real
 * service as a process (embedded, or on a database of its own and REDIS_URL in the Postgres pass):
 * a block one places the other sees, a chat line one sends the other reads, and after the service
 * is stopped and started again on the same data both pages show the connection back and keep
 * co-editing. Chromium draws WebGL with SwiftShader, on the CPU.
 *
 * The restarted service listens on the ports the first one picked, while the first one's closed
 * browser connections linger in TIME_WAIT on the gateway's (test/platform/gateway-restart.test.ts).
 *
 * The screenshot goes to test-artifacts/web-world.png (gitignored); `npm run docs:web-world` runs
 * this file with WEB_WORLD_SCREENSHOT=docs/images/web-world.png, the image README.md shows.
 */

const PAGE_DIR = fileURLToPath(new URL('../../examples/web-world/', import.meta.url));
const SCREENSHOT = process.env.WEB_WORLD_SCREENSHOT ?? join('test-artifacts', 'web-world.png');
const DEADLINE_MS = 20_000;
const { DATABASE_URL, REDIS_URL } = process.env;

requireChromium('the web world example', 'clients/web-world.test.ts');

describe.skipIf(!chromiumPath)('the web world example in headless Chromium', () => {
  let dataDir: string;
  let testDb: TestDatabase | undefined;
  let env: Record<string, string>;
  const services: ServiceProcess[] = [];
  let server: DevServer;
  let browser: Browser;

  /** The service as a process, on the ports of the one before it when there was one. */
  const startAtrium = async (httpPort = 0, wsPort = 0) => {
    const service = startService(dataDir, { ...env, HTTP_PORT: String(httpPort), WS_PORT: String(wsPort) });
    services.push(service);
    const listening = await service.listening;
    return { service, httpPort: listening.httpPort as number, wsPort: listening.wsPort as number };
  };

  beforeAll(async () => {
    dataDir = await preparedDataDir('atrium-web-world-');
    if (DATABASE_URL) {
      testDb = await createTestDatabase();
      env = {
        DATABASE_URL: testDb.url as string,
        REDIS_URL: REDIS_URL ?? '',
        REDIS_KEY_PREFIX: `test:web-world:${randomBytes(6).toString('hex')}:`,
        MIGRATE_ON_START: 'false',
      };
    } else {
      env = { DATABASE_URL: '', REDIS_URL: '' };
    }
    browser = await chromium.launch({
      executablePath: chromiumPath,
      // WebGL without a GPU: ANGLE on SwiftShader.
      args: [
        '--no-sandbox',
        '--use-angle=swiftshader',
        '--enable-unsafe-swiftshader',
        '--ignore-gpu-blocklist',
      ],
    });
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    for (const { child, exited } of services) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const openPage = async (): Promise<Page> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
    context.setDefaultTimeout(DEADLINE_MS);
    const page = await context.newPage();
    // Uncaught errors only: the console reports each refused reconnect while the service is down.
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(server.url);
    Object.assign(page, { errors });
    return page;
  };

  const register = async (page: Page, username: string) => {
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: /^Register/ }).click();
    await page.locator('body[data-app="ready"]').waitFor();
    await connected(page);
  };

  const connected = (page: Page) => page.locator('#connection[data-state="ready"]').waitFor();

  /** Clicks the middle of the scene, where the camera looks at the ground: a block goes on what it hits. */
  const placeBlock = async (page: Page): Promise<string> => {
    const placed = page.locator('#feed li[data-kind="placed"]');
    const before = await placed.count();
    const box = await page.locator('#scene').boundingBox();
    if (!box) throw new Error('the scene has no box');
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await placed.nth(before).waitFor();
    return (await placed.nth(before).getAttribute('data-at')) as string;
  };

  const seesBlockAt = (page: Page, at: string) =>
    page.locator(`#feed li[data-kind="placed"][data-at="${at}"]`).waitFor();

  it(
    'two users co-edit and chat live, and both pages recover when the service restarts',
    async () => {
      const first = await startAtrium();
      server = await startDevServer({
        atriumHttpUrl: `http://127.0.0.1:${first.httpPort}`,
        atriumWsUrl: `ws://127.0.0.1:${first.wsPort}/ws`,
        port: 0,
        pageDir: PAGE_DIR,
      });
      const [alice, bob] = [await openPage(), await openPage()];
      await Promise.all([register(alice, uniqueUsername('alice')), register(bob, uniqueUsername('bob'))]);

      // Alice creates a public world, which starts with 2 x 2 chunks of terrain.
      const worldName = `Garden ${randomBytes(3).toString('hex')}`;
      await alice.locator('#create-world input[name="name"]').fill(worldName);
      await alice.locator('#create-world button').click();
      await expect
        .poll(() => alice.locator('#feed li[data-kind="bulk"]').count(), { timeout: DEADLINE_MS })
        .toBe(4);
      const blocks = await alice.locator('#world-info').getAttribute('data-blocks');

      // Bob finds it among the public worlds and sees the same terrain.
      await bob.locator('#refresh-worlds').click();
      await bob.locator('#public-worlds li', { hasText: worldName }).click();
      await bob.locator(`#world-info[data-blocks="${blocks}"]`).waitFor();

      await alice.locator('#palette [data-block="brick"]').click();
      const at = await placeBlock(alice);
      await seesBlockAt(bob, at);

      const line = `hello from alice ${randomBytes(3).toString('hex')}`;
      await alice.locator('#chat-form input').fill(line);
      await alice.locator('#chat-form input').press('Enter');
      await bob.locator('#chat li', { hasText: line }).waitFor();
      await bob.locator('#roster li', { hasText: 'alice' }).waitFor();

      await mkdir(dirname(SCREENSHOT), { recursive: true });
      await bob.screenshot({ path: SCREENSHOT });

      // The service stops: both pages say so, and come back on their own once it is up again.
      first.service.child.kill('SIGTERM');
      expect(await first.service.exited).toBe(0);
      await Promise.all(
        [alice, bob].map((page) => page.locator('#connection:not([data-state="ready"])').waitFor()),
      );
      await startAtrium(first.httpPort, first.wsPort);
      await Promise.all([connected(alice), connected(bob)]);

      const afterRestart = await placeBlock(alice);
      await seesBlockAt(bob, afterRestart);

      for (const page of [alice, bob]) {
        const { errors } = page as Page & { errors: string[] };
        expect(errors, errors.join('\n')).toEqual([]);
      }
    },
    PROCESS_TEST_TIMEOUT_MS * 2,
  );
});
