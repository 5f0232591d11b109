import { ErrorCode, type FieldError } from '../../protocol/errors.js';

export { ErrorCode, type FieldError };

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
    } = {},
  ) {
    super(message);
  }
}

/** The only code -> HTTP status table. */
const statusByCode: Record<ErrorCode, number> = {
  MALFORMED_REQUEST: 400,
  VALIDATION_FAILED: 422,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
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
  INTERNAL: 500,
};

const titleByStatus: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function httpStatusFor(code: ErrorCode): number {
  return statusByCode[code];
}

/** RFC 9457 problem details body, as sent with `Content-Type: application/problem+json`. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export function toProblem(error: AppError): ProblemDetails {
  const status = httpStatusFor(error.code);
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

/** Wraps anything thrown into an AppError without leaking internals to the caller. */
export function asAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  return new AppError(ErrorCode.INTERNAL, 'An unexpected error occurred.');
}
