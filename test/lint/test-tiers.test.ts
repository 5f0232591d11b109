import { describe, expect, it } from 'vitest';
import { isProcessTest, testFilesUnder } from '../helpers/test-tiers.js';

describe('the test tiers', () => {
  it('puts files that start the service, the CLI, a browser or a compiler in the process tier', () => {
    for (const file of [
      'test/lifecycle.test.ts',
      'test/economy/verify-command.test.ts',
      'test/clients/web-world.test.ts',
      'test/clients/package.test.ts',
      'test/clients/generated-types.test.ts',
      'test/start-script.test.ts',
    ]) {
      expect(isProcessTest(file), file).toBe(true);
    }
  });

  it('keeps files that build the app in the test process in the in-process tier, the fuzzers and game-server launches included', () => {
    for (const file of [
      'test/chat/world-chat-limits.test.ts',
      'test/fuzz/rest.fuzz.test.ts',
      'test/gameservers/gameservers.test.ts',
      'test/lint/test-tiers.test.ts',
    ]) {
      expect(isProcessTest(file), file).toBe(false);
    }
  });

  it('finds every test file under the given folders, and only test files', () => {
    const files = testFilesUnder(['test', 'protocol']);
    expect(files).toContain('test/lifecycle.test.ts');
    expect(files).toContain('test/lint/test-tiers.test.ts');
    expect(files.every((file) => file.endsWith('.test.ts'))).toBe(true);
    expect(files.filter((file) => file.startsWith('protocol/')).length).toBeGreaterThan(0);
  });
});
