import { positiveInt } from '../../platform/config-fields.js';

/** The inbox's settings (docs/notifications.md), assembled into the Config by src/config.ts. */
export const notificationsConfig = {
  /** Notifications kept per user: storing one more removes the oldest read ones, then the oldest unread. */
  NOTIFICATIONS_MAX_PER_USER: positiveInt(1000, 1_000_000),
};
