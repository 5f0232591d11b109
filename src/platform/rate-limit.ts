import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { AppError, ErrorCode } from './errors.js';
import { type Kv, RedisBackedKv } from './kv/index.js';

export interface LimiterOptions {
  keyPrefix: string;
  points: number;
  durationSeconds: number;
}

/**
 * A limiter shared by every node through Redis when the service runs with REDIS_URL, in-process
 * otherwise. When Redis fails, the in-memory insurance limiter keeps limiting per node rather than
 * letting every request through or failing it: at once while the connection is down (the limiter
 * does not even try Redis then), and after the command timeout when Redis does not answer.
 */
export function createLimiter(kv: Kv, options: LimiterOptions): RateLimiterAbstract {
  const base = {
    keyPrefix: `rl:${options.keyPrefix}`,
    points: options.points,
    duration: options.durationSeconds,
  };
  if (kv instanceof RedisBackedKv) {
    return new RateLimiterRedis({
      ...base,
      storeClient: kv.client,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory(base),
    });
  }
  return new RateLimiterMemory(base);
}

/** The 429 for a rejected consume, with Retry-After rounded up to whole seconds. */
export function rateLimited(message: string, msBeforeNext: number): AppError {
  return new AppError(ErrorCode.RATE_LIMITED, message, {
    retryAfterSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
  });
}

/** Consumes one point or throws the 429; store errors (not rejections) propagate. */
export async function consumeOrThrow(
  limiter: RateLimiterAbstract,
  key: string,
  message: string,
): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (error) {
    if (error instanceof RateLimiterRes) throw rateLimited(message, error.msBeforeNext);
    throw error;
  }
}
