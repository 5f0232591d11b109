/**
 * The scores of the benchmark's users. Seeded: user n's score is a multiplicative hash of n
 * (exact in JS: n·2654435761 < 2^53), the same in SQL, so the standings are no user order.
 * Submitted (the REST load and the bare one alike): half of them beat the user's best, half do
 * not, whatever the user sent before: a better one is the seeded score plus the milliseconds since
 * the run's `t0` plus 1 (later is higher), a worse one is below the seeded score.
 */

export const scoreOf = (n: number) => (n * 2654435761) % 1_000_000_000;
export const scoreSql = (n: string) => `((${n})::bigint * 2654435761) % 1000000000`;

export function submittedScore(n: number, t0: number): number {
  return Math.random() < 0.5
    ? scoreOf(n) + 1 + (Date.now() - t0)
    : scoreOf(n) - 1 - Math.floor(Math.random() * 1000);
}

/** A submitter's number, 1..submitters, drawn at random. */
export const anySubmitter = (submitters: number) => 1 + Math.floor(Math.random() * submitters);
