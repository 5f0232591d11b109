import { positiveInt } from '../../platform/config-fields.js';

/** The worlds module's settings (docs/worlds.md, docs/limits.md), assembled into the Config by src/config.ts. */
export const worldsConfig = {
  /**
   * Per-account limits (docs/limits.md). Count quotas answer 409 QUOTA_EXCEEDED with `limit`;
   * rates answer 429 RATE_LIMITED with Retry-After, shared by every node through Redis.
   */
  MAX_WORLDS_PER_USER: positiveInt(100, 1_000_000),
  MAX_ROOMS_PER_WORLD: positiveInt(100, 10_000),
  /** Chunk payload bytes per world: its live chunks' payloads plus the revision history it keeps. */
  MAX_WORLD_CONTENT_BYTES: positiveInt(256 * 1024 * 1024, 2 ** 50),
  /** Worlds (and groups, counted apart) one user may create per window. */
  CREATE_RATE_LIMIT_COUNT: positiveInt(10, 100_000),
  CREATE_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
  /**
   * Revision history (docs/worlds.md, "Retention"): revisions superseded longer ago than this are
   * pruned, and each chunk keeps at most WORLD_HISTORY_MAX_REVISIONS; a rollback before the
   * world's horizon answers 409 with it. The pruning pass runs on every node at this interval.
   */
  WORLD_HISTORY_RETENTION_SECONDS: positiveInt(7 * 86_400, 10 * 365 * 86_400),
  WORLD_HISTORY_MAX_REVISIONS: positiveInt(32, 1_000_000),
  WORLD_HISTORY_PRUNE_INTERVAL_SECONDS: positiveInt(60, 86_400),
};
