export interface ReconnectOptions {
  /** Delay before the first reconnect attempt; it doubles with each failed attempt. Default 500 ms. */
  initialDelayMs?: number;
  /** Cap of the delay. Default 30 000 ms. */
  maxDelayMs?: number;
  /** Share of the delay taken off at random, 0-1, so clients do not reconnect in step. Default 0.5. */
  jitter?: number;
}

/** How long AtriumClient waits before its next attempt after `failedAttempts` failed ones in a row. */
export function reconnectDelayMs(options: ReconnectOptions, failedAttempts: number): number {
  const { initialDelayMs = 500, maxDelayMs = 30_000, jitter = 0.5 } = options;
  const delay = Math.min(maxDelayMs, initialDelayMs * 2 ** failedAttempts);
  return delay * (1 - jitter * Math.random());
}
