import { positiveInt } from '../../platform/config-fields.js';

/** The discovery module's settings, assembled into the Config by src/config.ts. */
export const discoveryConfig = {
  /**
   * Discovery (docs/discovery.md): visits reach the counters at the next fold (what a kill -9 can
   * leave uncounted until a node folds again), and popular and trending rank a snapshot at most
   * this old.
   */
  DISCOVERY_FOLD_INTERVAL_SECONDS: positiveInt(5, 3600),
  DISCOVERY_RANK_INTERVAL_SECONDS: positiveInt(60, 3600),
};
