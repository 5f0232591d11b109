import { z } from 'zod';
import { intInRange, positiveInt } from '../../platform/config-fields.js';

/** Server extensions' settings (docs/extensions.md), assembled into the Config by src/config.ts. */
export const extensionsConfig = {
  /**
   * Comma-separated paths of the extension modules each process loads at start, in this order;
   * relative paths resolve against the working directory. Unset or empty: none.
   */
  EXTENSIONS: z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((path) => path.trim())
        .filter((path) => path.length > 0),
    ),
  /** The deadline of one call of an extension's rpc, hook or event handler. */
  EXTENSION_TIMEOUT_MS: intInRange(2000, 1, 60_000),
  /** How long a domain event claimed by a node that stopped waits before any node handles it again. */
  EXTENSION_EVENT_RETRY_SECONDS: positiveInt(30, 86_400),
  /** Storage records one extension may hold (every collection and user together); one more is refused QUOTA_EXCEEDED. */
  EXTENSION_STORAGE_MAX_RECORDS: positiveInt(1_000_000, 1_000_000_000),
  /** Attempts of one event handler before the event is dropped for it with an error log. */
  EXTENSION_EVENT_MAX_ATTEMPTS: positiveInt(5, 100),
};
