import { positiveInt } from '../../platform/config-fields.js';

/** The moderation module's settings (docs/moderation.md), assembled into the Config by src/config.ts. */
export const moderationConfig = {
  /** Message reports one user may file per window. */
  REPORT_RATE_LIMIT_COUNT: positiveInt(10, 100_000),
  REPORT_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
};
