import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { isProcessTest } from './test-tiers.js';

/** Files that launch game-server processes wait on them too. */
const launchesGameServers = /GAMESERVER_COMMAND/;

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
      sorted.filter((file) => {
        const source = readFileSync(file.moduleId, 'utf8');
        return (
          file.moduleId.endsWith('.fuzz.test.ts') ||
          isProcessTest(file.moduleId, source) ||
          launchesGameServers.test(source)
        );
      }),
    );
    return [...long, ...sorted.filter((file) => !long.has(file))];
  }
}
