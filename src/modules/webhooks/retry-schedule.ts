/**
 * When a failed delivery is due again (docs/webhooks.md): after failed attempt n of its retry
 * budget, `baseSeconds` × 2^(n-1) seconds later plus at most 10% of that as jitter, never earlier;
 * null once the budget's `maxAttempts` attempts failed (the delivery is `failed`).
 */
export function nextAttemptAfterFailure(
  failedInBudget: number,
  settings: { baseSeconds: number; maxAttempts: number },
  at: Date,
  random: () => number = Math.random,
): Date | null {
  if (failedInBudget >= settings.maxAttempts) return null;
  const delayMs = settings.baseSeconds * 1000 * 2 ** (failedInBudget - 1);
  return new Date(at.getTime() + delayMs + Math.floor(delayMs * 0.1 * random()));
}
