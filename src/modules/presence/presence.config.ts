import { positiveInt } from '../../platform/config-fields.js';

/** The presence module's settings (docs/presence.md), assembled into the Config by src/config.ts. */
export const presenceConfig = {
  PRESENCE_TTL_SECONDS: positiveInt(60, 86_400),
  /** How often coalesced last_seen_at updates are written to the database. */
  LAST_SEEN_FLUSH_MS: positiveInt(5000, 600_000),
  /**
   * How long status messages may wait to be written to the database: each user's latest within
   * the window goes out in one statement for all (readers see it at once through the KV store).
   */
  STATUS_FLUSH_MS: positiveInt(200, 60_000),
  /**
   * A node that has not renewed its lease for this long counts as dead: another node ends the
   * presence of its users. Renewed every third of it, so keep it well above any expected pause.
   */
  NODE_LEASE_SECONDS: positiveInt(10, 3600),
};
