import { bool, intInRange, positiveInt } from '../../platform/config-fields.js';

/** The webhooks' settings (docs/webhooks.md), assembled into the Config by src/config.ts. */
export const webhooksConfig = {
  /** The whole of one attempt (address check, connection, answer). */
  WEBHOOK_TIMEOUT_SECONDS: intInRange(10, 1, 60),
  /** After failed attempt n the next is due this × 2^(n-1) seconds later, plus up to 10% jitter. */
  WEBHOOK_RETRY_BASE_SECONDS: positiveInt(5, 86_400),
  /** Failed attempts before a delivery is `failed`; a redelivery gets as many again. */
  WEBHOOK_MAX_ATTEMPTS: intInRange(8, 1, 20),
  /** Loopback, private and CGNAT addresses pass the address rules too (never link-local or metadata). */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool(false),
  /** How long deliveries carry the previous secret's signature too after a rotation; 0: not at all. */
  WEBHOOK_SECRET_ROTATION_GRACE_SECONDS: intInRange(86_400, 0, 2 ** 31 - 1),
  WEBHOOK_MAX_ENDPOINTS: positiveInt(50, 10_000),
  /** Delivered and failed deliveries are removed this many days after they finished. */
  WEBHOOK_DELIVERY_RETENTION_DAYS: positiveInt(30, 36_500),
};
