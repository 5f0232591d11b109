import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { describe, it } from 'vitest';

/**
 * Where the browser tests find Chromium: CHROMIUM_PATH, else `chromium` or `chromium-browser` on
 * PATH (Debian's package). CI must have it (.ci/run installs it), so there a missing Chromium
 * fails; elsewhere the browser tests are skipped with a warning.
 */

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const name of ['chromium', 'chromium-browser']) {
    const found = dirs.map((dir) => join(dir, name)).find(isExecutable);
    if (found) return found;
  }
  return undefined;
}

export const chromiumPath = findChromium();

/**
 * Registers the failing test CI needs when Chromium is missing, or warns outside CI; `what` names
 * the file's subject. Answers whether the file's browser tests can run.
 */
export function requireChromium(what: string, file: string): boolean {
  const missing = 'no Chromium: set CHROMIUM_PATH or install it (apt-get install chromium)';
  describe.runIf(!chromiumPath && process.env.CI)(`${what} in CI`, () => {
    it('needs Chromium, which CI must provide', () => {
      throw new Error(`${missing}; .ci/run installs it before the tests`);
    });
  });
  if (!chromiumPath && !process.env.CI) console.warn(`${file} skipped: ${missing}`);
  return chromiumPath !== undefined;
}
