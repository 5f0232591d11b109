import { positiveInt } from '../../platform/config-fields.js';

/** Leaderboards' settings (docs/leaderboards.md), assembled into the Config by src/config.ts. */
export const leaderboardsConfig = {
  /** Submissions (boards and tournaments together) one user may make per window, on every node together. */
  LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: positiveInt(60, 1_000_000),
  LEADERBOARD_SUBMIT_RATE_LIMIT_WINDOW_SECONDS: positiveInt(60, 86_400),
  /** Ended periods kept per board (at least the previous one); older ones are removed by the job. */
  LEADERBOARD_PERIODS_KEPT: positiveInt(1, 1000),
};
