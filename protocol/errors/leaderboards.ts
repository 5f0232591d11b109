/** The error codes of leaderboards and tournaments (docs/leaderboards.md), with their HTTP status. */
export const leaderboardErrors = {
  /** The tournament has as many participants as its `max_size`; the body carries `max_size`. */
  TOURNAMENT_FULL: 409,
  /** The tournament is not open for this: joining after its end, or a submission outside its window; the body carries `state`, `start_at` and `end_at` where they apply. */
  TOURNAMENT_CLOSED: 409,
  /** The tournament needs its participants to join before they submit. */
  NOT_JOINED: 403,
  /** An `incr` would take the score or subscore outside ±(2^53-1); nothing was written. */
  SCORE_OUT_OF_RANGE: 422,
};
