/** The error codes of the economy, with their HTTP status. */
export const economyErrors = {
  /** A purchase or payout needs more than the account holds: the body carries `balance` and `required`. */
  INSUFFICIENT_FUNDS: 409,
  /** A purchase of a non-consumable item the buyer already owns. */
  ALREADY_OWNED: 409,
  /** An Idempotency-Key sent again with another request (method, path or body); nothing was done. */
  IDEMPOTENCY_KEY_REUSED: 422,
  /** The first request with this Idempotency-Key is still running; retry it. */
  IDEMPOTENCY_KEY_IN_USE: 409,
};
