import { intInRange, positiveInt } from '../../platform/config-fields.js';

/** The economy's settings (docs/economy.md), assembled into the Config by src/config.ts. */
export const economyConfig = {
  /** The platform's fee on a sale, in basis points of its price (3000: 30%); at least 1 coin unless 0. */
  ECONOMY_FEE_BPS: intInRange(3000, 0, 10_000),
  /** How long a sale's earnings wait in creator_pending (the refund window) before they are available. */
  ECONOMY_HOLD_SECONDS: intInRange(7 * 86_400, 0, 365 * 86_400),
  /** How often every node releases the holds that came due. */
  ECONOMY_RELEASE_INTERVAL_SECONDS: positiveInt(60, 86_400),
  /** The smallest payout a creator may request, in minor units. */
  ECONOMY_PAYOUT_MINIMUM: positiveInt(1000, 1_000_000_000_000),
  /** How long a write's stored answer replays for a retry with its Idempotency-Key, at least. */
  ECONOMY_IDEMPOTENCY_TTL_HOURS: positiveInt(24, 24 * 365),
  /** Catalog items, listings and payout requests one user may create per window (together). */
  ECONOMY_CREATE_RATE_LIMIT_COUNT: positiveInt(30, 100_000),
  ECONOMY_CREATE_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
  /** Purchases one user may make per window; a replayed retry (same Idempotency-Key) spends nothing. */
  ECONOMY_PURCHASE_RATE_LIMIT_COUNT: positiveInt(30, 100_000),
  ECONOMY_PURCHASE_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
};
