import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a test file names when it starts the service or the CLI as a process, a browser, a
 * compiler or initdb (the embedded cluster cache's tests make clusters in child processes). Such
 * files wait on other processes for most of their time (tsx compiling the sources, an embedded
 * database opening, a browser starting), so they are a tier of their own: `npm test`
 * runs every other file, and `npm run test:all` (CI) runs both (docs/architecture.md, "Two tiers").
 */
const startsProcesses =
  /service-process\.js|node:child_process|chromium|esbuild|from 'typescript'|platform\/embedded-cluster\.js/;

/** Whether a test file is of the process tier. */
export function isProcessTest(path: string, source = readFileSync(path, 'utf8')): boolean {
  return startsProcesses.test(source);
}

/** The test files under `dirs` (relative to the working directory), as vitest's include finds them. */
export function testFilesUnder(dirs: readonly string[]): string[] {
  return dirs.flatMap((dir) =>
    readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.test.ts') && !name.split(/[\\/]/).includes('node_modules'))
      .map((name) => join(dir, name).replaceAll('\\', '/')),
  );
}
