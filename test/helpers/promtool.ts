import { execFileSync } from 'node:child_process';
import { describe, it } from 'vitest';

/** Debian's `prometheus` package's promtool, when it is on PATH. */
export const promtoolPresent = (() => {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/**
 * Registers the failing test CI needs when promtool is missing (.ci/run installs it), or warns
 * outside CI; answers whether promtool's checks can run.
 */
export function requirePromtool(file: string): boolean {
  const missing = 'no promtool: install it (apt-get install prometheus)';
  describe.runIf(!promtoolPresent && process.env.CI)('promtool in CI', () => {
    it('needs promtool, which CI must provide', () => {
      throw new Error(`${missing}; .ci/run installs it before the tests`);
    });
  });
  if (!promtoolPresent && !process.env.CI) console.warn(`${file}: promtool checks skipped: ${missing}`);
  return promtoolPresent;
}

/** Runs promtool; throws with its output when it fails. */
export function promtool(...args: string[]): string {
  try {
    return execFileSync('promtool', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${stdout}${stderr}`);
  }
}
