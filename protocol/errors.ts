/**
 * Stable error codes shared by REST problem details (`code`) and gateway error frames (`code`).
 * Clients switch on these strings; never rename one, only add.
 */
export const ErrorCode = {
  /** The request body or frame is not well-formed (bad JSON, bad msgpack, not a map). */
  MALFORMED_REQUEST: 'MALFORMED_REQUEST',
  /** The input is well-formed but breaks a rule; `errors` lists the fields. */
  VALIDATION_FAILED: 'VALIDATION_FAILED',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  /** The request URL is longer than the server reads. */
  URI_TOO_LONG: 'URI_TOO_LONG',
  /** The request's header fields are larger than the server reads. */
  HEADERS_TOO_LARGE: 'HEADERS_TOO_LARGE',
  ROUTE_NOT_FOUND: 'ROUTE_NOT_FOUND',
  NOT_FOUND: 'NOT_FOUND',
  METHOD_NOT_ALLOWED: 'METHOD_NOT_ALLOWED',
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  CONFLICT: 'CONFLICT',
  RATE_LIMITED: 'RATE_LIMITED',
  /** Registration without `confirm_18_plus: true`: the service is for adults only. */
  AGE_GATE: 'AGE_GATE',
  /** Registration without `accept_terms: true`. */
  TERMS_NOT_ACCEPTED: 'TERMS_NOT_ACCEPTED',
  USERNAME_TAKEN: 'USERNAME_TAKEN',
  EMAIL_TAKEN: 'EMAIL_TAKEN',
  /** Wrong username or password; deliberately the same for both. */
  INVALID_CREDENTIALS: 'INVALID_CREDENTIALS',
  /** A refresh token that is unknown, expired, revoked or already used. */
  INVALID_REFRESH_TOKEN: 'INVALID_REFRESH_TOKEN',
  /** A password re-check (for example before deleting the account) failed. */
  PASSWORD_INCORRECT: 'PASSWORD_INCORRECT',
  UNKNOWN_FRAME_TYPE: 'UNKNOWN_FRAME_TYPE',
  /** A connection asked for more subscriptions than it may hold. */
  SUBSCRIPTION_LIMIT: 'SUBSCRIPTION_LIMIT',
  FRAME_TOO_LARGE: 'FRAME_TOO_LARGE',
  /** A readiness probe found a dependency (database or KV store) not answering: `/readyz` only. */
  UNAVAILABLE: 'UNAVAILABLE',
  /**
   * A request or frame could not be served because the database or Redis is down or did not answer
   * in time. Retry after `retry_after` seconds (REST: the `Retry-After` header). A write cut off
   * this way may still have been applied, as with any lost reply.
   */
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
  /** A chunk write without `If-Match` or `If-None-Match: *` (editors must say what they overwrite). */
  PRECONDITION_REQUIRED: 'PRECONDITION_REQUIRED',
  /** A write's expected revision is not the current one; the body carries the current revision. */
  REVISION_CONFLICT: 'REVISION_CONFLICT',
  /** A chunk payload that does not decode with the chunk codec; the body names the byte `offset`. */
  INVALID_CHUNK: 'INVALID_CHUNK',
  /** The text filter refused a message (DM_FILTER_MODE=reject); nothing was stored. */
  MESSAGE_REJECTED: 'MESSAGE_REJECTED',
  /**
   * No game server can be started now: the node runs GAMESERVER_MAX_RUNNING already, or Agones has
   * no GameServer to allocate. Retry later.
   */
  GAMESERVER_CAPACITY: 'GAMESERVER_CAPACITY',
  /**
   * The game server could not be started or did not become ready (it failed, crashed or missed its
   * readiness deadline); the detail says why.
   */
  GAMESERVER_UNAVAILABLE: 'GAMESERVER_UNAVAILABLE',
  /**
   * A per-account count quota is reached (worlds per user, rooms per world, live content bytes per
   * world, ...): the body carries `limit`; nothing was written (docs/limits.md).
   */
  QUOTA_EXCEEDED: 'QUOTA_EXCEEDED',
  /** The group has GROUP_MAX_MEMBERS members: a join or an approval waits for someone to leave. */
  GROUP_FULL: 'GROUP_FULL',
  /** A purchase or payout needs more than the account holds: the body carries `balance` and `required`. */
  INSUFFICIENT_FUNDS: 'INSUFFICIENT_FUNDS',
  /** A purchase of a non-consumable item the buyer already owns. */
  ALREADY_OWNED: 'ALREADY_OWNED',
  /** An Idempotency-Key sent again with another request (method, path or body); nothing was done. */
  IDEMPOTENCY_KEY_REUSED: 'IDEMPOTENCY_KEY_REUSED',
  /** The first request with this Idempotency-Key is still running; retry it. */
  IDEMPOTENCY_KEY_IN_USE: 'IDEMPOTENCY_KEY_IN_USE',
  INTERNAL: 'INTERNAL',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * The only code -> HTTP status table, beside the codes so that a new code is one edit. The gateway
 * sends the code alone; REST answers with this status.
 */
export const httpStatusByCode: Record<ErrorCode, number> = {
  MALFORMED_REQUEST: 400,
  VALIDATION_FAILED: 422,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  HEADERS_TOO_LARGE: 431,
  ROUTE_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  AGE_GATE: 422,
  TERMS_NOT_ACCEPTED: 422,
  USERNAME_TAKEN: 409,
  EMAIL_TAKEN: 409,
  INVALID_CREDENTIALS: 401,
  INVALID_REFRESH_TOKEN: 401,
  PASSWORD_INCORRECT: 403,
  UNKNOWN_FRAME_TYPE: 400,
  SUBSCRIPTION_LIMIT: 422,
  FRAME_TOO_LARGE: 413,
  UNAVAILABLE: 503,
  SERVICE_UNAVAILABLE: 503,
  PRECONDITION_REQUIRED: 428,
  REVISION_CONFLICT: 409,
  INVALID_CHUNK: 422,
  MESSAGE_REJECTED: 422,
  GAMESERVER_CAPACITY: 503,
  GAMESERVER_UNAVAILABLE: 503,
  QUOTA_EXCEEDED: 409,
  GROUP_FULL: 409,
  INSUFFICIENT_FUNDS: 409,
  ALREADY_OWNED: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  IDEMPOTENCY_KEY_IN_USE: 409,
  INTERNAL: 500,
};

export interface FieldError {
  /** Dotted path of the offending field, `''` for the whole body. */
  path: string;
  message: string;
}
