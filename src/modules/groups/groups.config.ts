import { positiveInt } from '../../platform/config-fields.js';

/**
 * The groups module's settings (docs/groups.md), assembled into the Config by src/config.ts.
 * Creating a group and joining one count against CREATE_RATE_LIMIT_* (worlds) and
 * SOCIAL_RATE_LIMIT_* (social), each in a limiter of its own.
 */
export const groupsConfig = {
  MAX_GROUPS_PER_USER: positiveInt(20, 10_000),
  GROUP_MAX_MEMBERS: positiveInt(100, 100_000),
  GROUP_MAX_MEMBERSHIPS_PER_USER: positiveInt(100, 10_000),
};
