import type { Config } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/platform/log.js';

/** Lines kept per app: the last ones before a failure are the ones that explain it. */
const KEPT_LINES = 30;

/** The kept lines of each test app now open, by its label. */
const openApps = new Map<string, string[]>();
let built = 0;

/**
 * A logger at warn for a test app whose config keeps the service silent (testConfig), writing to
 * memory: a test whose call answered 503 then says which dependency failed, and why
 * (printWarningsOfOpenApps, run by test/helpers/failure-warnings.ts when a test fails). A config
 * that asks for a log level of its own gets the service's logger, undefined here. `forget` is
 * called when the app closes.
 */
export function keptWarnings(config: Config): { log?: Logger; forget(): void } {
  if (config.LOG_LEVEL !== 'silent') return { forget: () => {} };
  const label = `test app ${++built}`;
  const lines: string[] = [];
  openApps.set(label, lines);
  const write = (line: string) => {
    lines.push(line.trimEnd());
    if (lines.length > KEPT_LINES) lines.shift();
  };
  return { log: createLogger({ LOG_LEVEL: 'warn' }, { write }), forget: () => openApps.delete(label) };
}

/** Writes to stderr what the open test apps logged at warn and above, after `testName` failed. */
export function printWarningsOfOpenApps(testName: string): void {
  for (const [label, lines] of openApps) {
    if (lines.length === 0) continue;
    process.stderr.write(`${label} logged, up to the failure of "${testName}":\n${lines.join('\n')}\n`);
  }
}
