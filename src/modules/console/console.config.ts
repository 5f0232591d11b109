import { positiveInt } from '../../platform/config-fields.js';

/** The operator console's settings (docs/console.md). */
export const consoleConfig = {
  /** An operator's console session ends after this long without a request (and at the latest with its refresh token). */
  CONSOLE_SESSION_IDLE_SECONDS: positiveInt(3600, 7 * 86_400),
  /** How often each node samples its own metrics for the console's overview and its charts. */
  CONSOLE_SAMPLE_INTERVAL_SECONDS: positiveInt(10, 3600),
};
