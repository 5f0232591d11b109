import { positiveInt } from '../../platform/config-fields.js';

/** The auth module's settings (docs/accounts.md), assembled into the Config by src/config.ts. */
export const authConfig = {
  REFRESH_TOKEN_TTL_SECONDS: positiveInt(30 * 86_400, 365 * 86_400),
  LOGIN_MAX_FAILURES: positiveInt(5, 1000),
  LOGIN_LOCKOUT_SECONDS: positiveInt(900, 86_400),
  LOGIN_IP_MAX_ATTEMPTS: positiveInt(30, 1_000_000),
  LOGIN_IP_WINDOW_SECONDS: positiveInt(60, 86_400),
  REGISTER_IP_MAX_ATTEMPTS: positiveInt(20, 1_000_000),
  REGISTER_IP_WINDOW_SECONDS: positiveInt(3600, 86_400),
};
