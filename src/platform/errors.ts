import { ErrorCode, type FieldError, httpStatusByCode } from '../../protocol/errors.js';

export { ErrorCode, type FieldError };

/**
 * What a refusal is in the terms of the service that throws it (`kind`, and the facts a wording
 * needs), so that each transport's adapter can word it in its own (`Wording`). Never sent.
 */
export type Reason = { readonly kind: string; readonly [fact: string]: unknown };

/**
 * The one transport-neutral error services throw. Routes turn it into problem+json through
 * `httpStatusFor`, the gateway into an error frame carrying the same `code`.
 */
export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: {
      errors?: FieldError[];
      details?: Record<string, unknown>;
      retryAfterSeconds?: number;
      /** Set when the message or the field paths name things a transport words its own way. */
      reason?: Reason;
      /**
       * The HTTP status of a code that is not the platform's: a hook's refusal brings its own
       * code and status.
       */
      status?: number;
    } = {},
  ) {
    super(message);
  }

  /** The same refusal in a transport's words: another message, the rest as it is. */
  reworded(message: string): AppError {
    return new AppError(this.code, message, this.extra);
  }

  /**
   * The same refusal with its field paths under `prefix`, where a transport carries the request's
   * fields (`body.` on REST, `d.` in a frame); a message that starts with the first path (`path:
   * what is wrong`) names it there too.
   */
  under(prefix: string): AppError {
    const first = this.extra.errors?.[0]?.path;
    const message =
      first !== undefined && this.message.startsWith(`${first}: `)
        ? `${prefix}${this.message}`
        : this.message;
    return new AppError(this.code, message, {
      ...this.extra,
      ...(this.extra.errors
        ? { errors: this.extra.errors.map((error) => ({ ...error, path: `${prefix}${error.path}` })) }
        : {}),
    });
  }
}

/**
 * How one transport words the errors that carry a reason: the error it sends instead. It answers
 * an error whose reason it does not know as it is.
 */
export type Wording = (error: AppError, reason: Reason) => AppError;

/** `error` in the words of `word` when it is an AppError with a reason; anything else as it is. */
export function worded(error: unknown, word: Wording): unknown {
  return error instanceof AppError && error.extra.reason ? word(error, error.extra.reason) : error;
}

const titleByStatus: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function httpStatusFor(code: ErrorCode): number {
  return httpStatusByCode[code];
}

/** RFC 9457 problem details body, as sent with `Content-Type: application/problem+json`. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: FieldError[];
  [member: string]: unknown;
}

export function toProblem(error: AppError): ProblemDetails {
  const status = error.extra.status ?? httpStatusFor(error.code);
  return {
    type: `urn:atrium:problem:${error.code.toLowerCase()}`,
    title: titleByStatus[status] ?? 'Error',
    status,
    detail: error.message,
    code: error.code,
    ...(error.extra.errors ? { errors: error.extra.errors } : {}),
    ...error.extra.details,
  };
}

/** The gateway's error frame body for the same error: the same `code` a REST client would see. */
export function toErrorFrame(error: AppError, id?: number) {
  return {
    t: 'error' as const,
    ...(id === undefined ? {} : { id }),
    code: error.code,
    message: error.message,
    ...(error.extra.errors ? { errors: error.extra.errors } : {}),
    ...(error.extra.retryAfterSeconds === undefined ? {} : { retry_after: error.extra.retryAfterSeconds }),
    ...error.extra.details,
  };
}

/** How long a client should wait before retrying after a dependency failure. */
export const DEPENDENCY_RETRY_AFTER_SECONDS = 1;

/**
 * Wraps anything thrown into an AppError without leaking internals to the caller. A failure of
 * the database or Redis becomes SERVICE_UNAVAILABLE (503 with Retry-After) rather than INTERNAL:
 * the request was fine and will succeed once the dependency is back. So does a transaction the
 * database kept rolling back for concurrent ones (a deadlock, a serialization failure), which
 * `transaction` already ran again: the request was fine and will succeed when retried. With
 * `log`, that failure is logged at warn with only the reason recognised (an error code or a
 * driver's fixed message), since a driver's full message can carry SQL with the values of the
 * statement.
 */
export function asAppError(error: unknown, log?: { warn(object: object, message: string): void }): AppError {
  if (error instanceof AppError) return error;
  if (lostToConcurrentTransaction(error)) {
    log?.warn(
      { reason: (error as { code: string }).code },
      'a transaction kept losing to concurrent ones; answering SERVICE_UNAVAILABLE',
    );
    return new AppError(
      ErrorCode.SERVICE_UNAVAILABLE,
      'The request conflicted with concurrent ones; retry shortly.',
      { retryAfterSeconds: DEPENDENCY_RETRY_AFTER_SECONDS },
    );
  }
  const reason = dependencyFailureReason(error);
  if (reason !== undefined) {
    log?.warn({ reason }, 'a dependency failed; answering SERVICE_UNAVAILABLE');
    return new AppError(
      ErrorCode.SERVICE_UNAVAILABLE,
      'A backing service is unavailable or did not answer in time; retry shortly.',
      { retryAfterSeconds: DEPENDENCY_RETRY_AFTER_SECONDS },
    );
  }
  return new AppError(ErrorCode.INTERNAL, 'An unexpected error occurred.');
}

/** Socket errors of a dependency that cannot be reached, or that dropped or timed out the connection. */
const networkErrorCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs meaning the server cannot serve now: connection exceptions (class 08),
 * shutdown or startup in progress, too many connections, and a statement cancelled by
 * statement_timeout.
 */
const unavailableSqlStates = new Set(['57P01', '57P02', '57P03', '53300', '57014']);

/**
 * PostgreSQL SQLSTATEs of a transaction rolled back for a concurrent one: a deadlock's victim
 * (40P01) and a serialization failure (40001). Run again, it would likely succeed, so
 * `transaction` retries it a few times and a request it still fails answers 503, never 500.
 */
const transactionConflictSqlStates = new Set(['40P01', '40001']);

/** Whether `error` is a statement's failure because Postgres rolled its transaction back for a concurrent one. */
export function lostToConcurrentTransaction(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && transactionConflictSqlStates.has(code);
}

/**
 * Error names of the drivers' own connection and timeout errors: MikroORM's ConnectionException
 * and knex's pool acquire timeout (migrations still run through them, migrate.ts), and ioredis's
 * give-up after a dropped connection.
 */
const dependencyErrorNames = new Set([
  'ConnectionException',
  'KnexTimeoutError',
  'MaxRetriesPerRequestError',
]);

/**
 * Messages the drivers use for these failures without a code. knex puts the SQL in front of a
 * query's error (`<sql> - <message>`) and MikroORM keeps that message, hence the suffix match.
 */
const dependencyErrorMessages = [
  // ioredis: no connection (its offline queue is off), a command over commandTimeout, a reply lost.
  "Stream isn't writeable and enableOfflineQueue options is false",
  'Connection is closed.',
  'Command timed out',
  'Command aborted due to connection close',
  // rate-limiter-flexible without an insurance limiter while Redis reconnects.
  'Redis connection is not ready',
  // pg: connect timeout, query_timeout, a connection that died under a query.
  'timeout expired',
  'Query read timeout',
  'Connection terminated unexpectedly',
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  // pg.Pool (db-pool.ts): no connection freed up in time, a connect over the pool's own bound, a
  // statement started while the pool closes (shutdown).
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
  'Cannot use a pool after calling end on the pool',
  // knex (the migrations' pool): it timed out handing out a connection, or was already destroyed.
  'Knex: Timeout acquiring a connection. The pool is probably full. Are you missing a .transacting(trx) call?',
  'Unable to acquire a connection',
];

interface ErrorFields {
  name?: unknown;
  code?: unknown;
  syscall?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/**
 * Why `error` says the database or Redis is down, unreachable or too slow (its code, name or the
 * driver's message), or undefined when it is some other failure. Looks through `cause` and
 * AggregateError members a few levels deep.
 */
export function dependencyFailureReason(error: unknown, depth = 0): string | undefined {
  if (typeof error !== 'object' || error === null || depth > 3) return undefined;
  const { name, code, syscall, message, cause, errors } = error as ErrorFields;
  if (typeof code === 'string') {
    if (networkErrorCodes.has(code) || unavailableSqlStates.has(code) || code.startsWith('08')) return code;
    // A unix socket (the embedded database's) that is gone.
    if (code === 'ENOENT' && syscall === 'connect') return code;
  }
  if (typeof name === 'string' && dependencyErrorNames.has(name)) return name;
  if (typeof message === 'string') {
    const known = dependencyErrorMessages.find((text) => message === text || message.endsWith(` - ${text}`));
    if (known !== undefined) return known;
  }
  const fromCause = cause === undefined ? undefined : dependencyFailureReason(cause, depth + 1);
  if (fromCause !== undefined || !Array.isArray(errors)) return fromCause;
  for (const member of errors) {
    const reason = dependencyFailureReason(member, depth + 1);
    if (reason !== undefined) return reason;
  }
  return undefined;
}
