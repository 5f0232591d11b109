import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadExtensions } from '../../src/modules/extensions/loader.js';
import { Registry } from '../../src/modules/extensions/registry.js';
import { StartupError } from '../../src/platform/startup-error.js';
import { PROCESS_TEST_TIMEOUT_MS, preparedDataDir, startService } from '../helpers/service-process.js';

/** Loading EXTENSIONS and the refusals that stop the start (docs/extensions.md, "Loading"). */
describe('loading extensions', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'atrium-extensions-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  /** Writes an extension module and answers its path. */
  const extension = async (file: string, source: string) => {
    const path = join(dir, file);
    await writeFile(path, source);
    return path;
  };
  const plain = (name: string, body = '') =>
    `export default { name: ${JSON.stringify(name)}, setup(api) { ${body} } };`;

  const refusalOf = async (paths: string[]) => {
    const error = await loadExtensions(paths, new Registry()).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(StartupError);
    return (error as Error).message;
  };

  it('loads modules in the order given, awaiting each setup before the next', async () => {
    const order: string[] = [];
    (globalThis as { loadOrder?: string[] }).loadOrder = order;
    const first = await extension(
      'first.mjs',
      plain(
        'first',
        "await new Promise((r) => setTimeout(r, 20)); globalThis.loadOrder.push('first');",
      ).replace('setup(api)', 'async setup(api)'),
    );
    const second = await extension('second.mjs', plain('second', "globalThis.loadOrder.push('second');"));
    const registry = new Registry();
    await loadExtensions([first, second], registry);
    expect(order).toEqual(['first', 'second']);
    expect(registry.extensions.map(({ name }) => name)).toEqual(['first', 'second']);
  });

  it.each([
    ['a missing file', 'missing.mjs', null, /cannot be loaded/],
    ['a syntax error', 'syntax.mjs', 'export default {', /cannot be loaded/],
    ['no default export', 'nodefault.mjs', 'export const x = 1;', /no default export/],
    ['a bad name', 'badname.mjs', 'export default { name: "Bad Name", setup() {} };', /name "Bad Name"/],
    [
      'a setup that is not a function',
      'nosetup.mjs',
      'export default { name: "nosetup" };',
      /\(nosetup\).*setup is not a function/,
    ],
    [
      'a setup that throws',
      'throws.mjs',
      'export default { name: "throws", setup() { throw new Error("no config"); } };',
      /\(throws\).*setup failed: no config/,
    ],
    [
      'a bad rpc name',
      'badrpc.mjs',
      'export default { name: "badrpc", setup(api) { api.rpc("Bad!", {}, () => 1); } };',
      /rpc name "Bad!"/,
    ],
    [
      'a hook on an unknown operation',
      'badop.mjs',
      'export default { name: "badop", setup(api) { api.before("dm.sned", () => {}); } };',
      /no operation dm\.sned/,
    ],
    [
      'a hook on a connection frame',
      'ping.mjs',
      'export default { name: "ping", setup(api) { api.after("ping", () => {}); } };',
      /no operation ping/,
    ],
    [
      'an unknown event type',
      'badevent.mjs',
      'export default { name: "badevent", setup(api) { api.on("user.exploded", () => {}); } };',
      /no domain event type user\.exploded/,
    ],
    [
      'a bad rpc option',
      'badoption.mjs',
      'export default { name: "badoption", setup(api) { api.rpc("x", { auth: "admin" }, () => 1); } };',
      /auth must be one of/,
    ],
    [
      'an unknown rpc option',
      'extraoption.mjs',
      'export default { name: "extraoption", setup(api) { api.rpc("x", { timeout: 5 }, () => 1); } };',
      /unknown option timeout/,
    ],
    [
      'an input that is not a schema',
      'badinput.mjs',
      'export default { name: "badinput", setup(api) { api.rpc("x", { input: {} }, () => 1); } };',
      /input must be a schema/,
    ],
  ])('refuses %s, naming the module and the reason', async (_what, file, source, reason) => {
    const path = source === null ? join(dir, file) : await extension(file, source);
    const message = await refusalOf([path]);
    expect(message).toContain(path);
    expect(message).toMatch(reason);
  });

  it('refuses a name or an rpc name that an earlier module took', async () => {
    const a = await extension('a.mjs', plain('twin', 'api.rpc("shared", {}, () => 1);'));
    const b = await extension('b.mjs', plain('twin'));
    expect(await refusalOf([a, b])).toMatch(/name twin is already taken/);
    const c = await extension('c.mjs', plain('other', 'api.rpc("shared", {}, () => 2);'));
    expect(await refusalOf([a, c])).toMatch(/rpc shared is already registered by twin/);
  });

  it('refuses registrations after setup returned', async () => {
    (globalThis as { keptApi?: unknown }).keptApi = undefined;
    const path = await extension('late.mjs', plain('late', 'globalThis.keptApi = api;'));
    await loadExtensions([path], new Registry());
    const api = (globalThis as { keptApi?: { rpc: (...args: unknown[]) => void } }).keptApi;
    expect(() => api?.rpc('later', {}, () => 1)).toThrow(/only be called while setup runs/);
  });

  it(
    'stops `serve` before it listens, with exit status 78 and the reason on stderr',
    async () => {
      const path = await extension(
        'fails.mjs',
        'export default { name: "fails", setup() { throw new Error("nope"); } };',
      );
      const dataDir = await preparedDataDir('atrium-extensions-start-');
      const service = startService(dataDir, { EXTENSIONS: path });
      let stderr = '';
      service.child.stderr?.on('data', (chunk) => {
        stderr += String(chunk);
      });
      expect(await service.exited).toBe(78);
      expect(service.lines.some((line) => line.msg === 'atrium listening')).toBe(false);
      expect(stderr).toContain(`Extension ${path} (fails) refused: its setup failed: nope`);
      await rm(dataDir, { recursive: true, force: true });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  const { DATABASE_URL, REDIS_URL } = process.env;
  it.skipIf(!DATABASE_URL || !REDIS_URL)(
    'stops worker mode with exit status 78 when a worker refuses an extension, instead of restarting it',
    async () => {
      const path = await extension(
        'workers.mjs',
        'export default { name: "workers", setup() { throw new Error("nope"); } };',
      );
      const dataDir = await preparedDataDir('atrium-extensions-workers-');
      const service = startService(dataDir, {
        EXTENSIONS: path,
        WORKERS: '2',
        DATABASE_URL: DATABASE_URL as string,
        REDIS_URL: REDIS_URL as string,
      });
      expect(await service.exited).toBe(78);
      expect(service.lines.map((line) => line.msg)).toContain(
        'a worker refused its configuration; stopping the service',
      );
      expect(service.lines.some((line) => line.msg === 'worker exited unexpectedly; restarting it')).toBe(
        false,
      );
      await rm(dataDir, { recursive: true, force: true });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
