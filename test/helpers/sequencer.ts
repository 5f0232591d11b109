import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** What a test file that waits on other processes (the CLI, game servers, a browser, a compiler) names. */
const startsProcesses =
  /service-process\.js|node:child_process|chromium|esbuild|from 'typescript'|GAMESERVER_COMMAND/;

/**
 * Vitest's order (longest first when it has timings, else largest file first), but the files that
 * start processes or fuzz every operation go before all others. They are the longest in wall time
 * and many are small files, so on a fresh clone (no timings) they would start last and run alone
 * at the end while the other workers sit idle.
 */
export class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const long = new Set(
      sorted.filter(
        (file) =>
          file.moduleId.endsWith('.fuzz.test.ts') ||
          startsProcesses.test(readFileSync(file.moduleId, 'utf8')),
      ),
    );
    return [...long, ...sorted.filter((file) => !long.has(file))];
  }
}
