import { positiveInt } from '../../platform/config-fields.js';

/** The social module's settings (docs/social.md), assembled into the Config by src/config.ts. */
export const socialConfig = {
  /** Friend requests and follows one user may make per window (together); group joins and requests, and party invitations, apart. */
  SOCIAL_RATE_LIMIT_COUNT: positiveInt(30, 100_000),
  SOCIAL_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
};
