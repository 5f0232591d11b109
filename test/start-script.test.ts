import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);

/**
 * scripts/start.mjs (`npm start`) in a copy of the checkout's shape: a src/main.ts and a
 * dist/src/main.js that each print which one ran and whether TypeScript loads.
 */
describe('npm start', () => {
  let root: string;
  const entry = (name: string) =>
    `console.log(JSON.stringify({ ran: '${name}', args: process.argv.slice(2), ts: !!process.env.TSX_SEEN }));\n`;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'atrium-start-'));
    for (const dir of ['scripts', 'src', 'protocol', 'migrations']) await mkdir(join(root, dir));
    for (const script of ['start.mjs', 'build-freshness.mjs'])
      await copyFile(join('scripts', script), join(root, 'scripts', script));
    await symlink(join(process.cwd(), 'node_modules'), join(root, 'node_modules'));
    await writeFile(join(root, 'package.json'), '{ "type": "module" }\n');
    // A TypeScript-only construct: it runs only through tsx.
    await writeFile(join(root, 'src', 'main.ts'), `const name: string = 'sources';\n${entry('sources')}`);
    await writeFile(join(root, 'protocol', 'index.ts'), 'export {};\n');
    await writeFile(join(root, 'migrations', 'index.ts'), 'export {};\n');
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const build = async (secondsFromNow: number) => {
    await mkdir(join(root, 'dist', 'src'), { recursive: true });
    const built = join(root, 'dist', 'src', 'main.js');
    await writeFile(built, entry('build'));
    const at = new Date(Date.now() + secondsFromNow * 1000);
    await utimes(built, at, at);
  };
  const start = async (env: Record<string, string> = {}) => {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'scripts', 'start.mjs'), 'serve'], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    return { ...(JSON.parse(stdout) as { ran: string; args: string[] }), stderr };
  };

  it('runs the sources through tsx when there is no build', async () => {
    expect(await start()).toMatchObject({ ran: 'sources', args: ['serve'], stderr: '' });
  });

  it('runs the compiled build when it is newer than every source file', async () => {
    await build(60);
    expect(await start()).toMatchObject({ ran: 'build', args: ['serve'], stderr: '' });
  });

  it('runs the sources, saying so, when a source file changed after the build', async () => {
    await build(-60);
    const started = await start();
    expect(started.ran).toBe('sources');
    expect(started.stderr).toContain('dist/ is older than the sources');
  });

  it('runs the build with TypeScript loading when an extension is a .ts file', async () => {
    await build(60);
    await writeFile(join(root, 'ext.ts'), "const seen: string = '1';\nprocess.env.TSX_SEEN = seen;\n");
    // The build imports the extension as the service's loader would; only tsx can load it.
    await writeFile(
      join(root, 'dist', 'src', 'main.js'),
      `await import(${JSON.stringify(join(root, 'ext.ts'))});\n${entry('build')}`,
    );
    await utimes(
      join(root, 'dist', 'src', 'main.js'),
      new Date(Date.now() + 60_000),
      new Date(Date.now() + 60_000),
    );
    expect(await start({ EXTENSIONS: 'ext.ts' })).toMatchObject({ ran: 'build', ts: true });
  });
});
