import { AppError, ErrorCode } from './errors.js';

/**
 * The refusal of a count quota (docs/limits.md): 409 QUOTA_EXCEEDED with the `limit` in the body,
 * so a client can say "at most 100 worlds" without knowing the configuration. The caller checks
 * the count under the lock that makes count and write one step, and writes nothing when refused.
 */
export function quotaExceeded(message: string, limit: number): AppError {
  return new AppError(ErrorCode.QUOTA_EXCEEDED, message, { details: { limit } });
}
