/**
 * The platform's error codes, with the HTTP status REST answers them with: refusals any request
 * or frame can meet, whatever its domain. They are in several parts only to keep the order in
 * which the codes were added (protocol/errors.ts).
 */

/** A request refused before or beside any domain's rules. */
export const requestErrors = {
  /** The request body or frame is not well-formed (bad JSON, bad msgpack, not a map). */
  MALFORMED_REQUEST: 400,
  /** The input is well-formed but breaks a rule; `errors` lists the fields. */
  VALIDATION_FAILED: 422,
  /** The request's content type is not one the route reads. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** The body is over HTTP_BODY_LIMIT_BYTES, or a part of it over its own limit (a chunk payload). */
  PAYLOAD_TOO_LARGE: 413,
  /** The request URL is longer than the server reads. */
  URI_TOO_LONG: 414,
  /** The request's header fields are larger than the server reads. */
  HEADERS_TOO_LARGE: 431,
  /** No route serves this path, under any method. */
  ROUTE_NOT_FOUND: 404,
  /** The resource does not exist, or the caller may not see it (a private world's existence stays hidden). */
  NOT_FOUND: 404,
  /** Routes serve this path under other methods only; `Allow` lists them. */
  METHOD_NOT_ALLOWED: 405,
  /** No valid access token (REST) or no authenticated socket (gateway) where one is needed. */
  UNAUTHENTICATED: 401,
  /** The caller is known but may not do this. */
  FORBIDDEN: 403,
  /** The request contradicts the current state (a duplicate, a state that does not allow it). */
  CONFLICT: 409,
  /** Too many requests or frames in the window; retry after `retry_after` seconds (REST: `Retry-After`). */
  RATE_LIMITED: 429,
};

/** The gateway's own refusals. */
export const gatewayErrors = {
  /** No handler for the frame's `t`. */
  UNKNOWN_FRAME_TYPE: 400,
  /** A connection asked for more subscriptions than it may hold. */
  SUBSCRIPTION_LIMIT: 422,
  /** A gateway frame over WS_MAX_FRAME_BYTES. */
  FRAME_TOO_LARGE: 413,
};

/** A dependency (the database, the KV store) not answering. */
export const availabilityErrors = {
  /** A readiness probe found a dependency (database or KV store) not answering: `/readyz` only. */
  UNAVAILABLE: 503,
  /**
   * A request or frame could not be served because the database or Redis is down or did not answer
   * in time, or because the database kept cancelling its transaction for concurrent ones (a
   * deadlock, a serialization failure; the service runs it again a few times first). Retry after
   * `retry_after` seconds (REST: the `Retry-After` header). A write cut off by a lost dependency may
   * still have been applied, as with any lost reply; a cancelled transaction wrote nothing.
   */
  SERVICE_UNAVAILABLE: 503,
};

/** Per-account quotas, which several domains apply (src/platform/quota.ts). */
export const quotaErrors = {
  /**
   * A per-account count quota is reached (worlds per user, rooms per world, content bytes per world
   * counting kept history, ...): the body carries `limit`; nothing was written (docs/limits.md).
   */
  QUOTA_EXCEEDED: 409,
};

/** Anything unexpected: logged with its cause, answered without it. Kept the last code. */
export const internalErrors = {
  /** An unexpected failure, logged on the server; the answer carries no detail. */
  INTERNAL: 500,
};
