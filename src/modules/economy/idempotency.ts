import { createHash } from 'node:crypto';
import { type Ctx, callerOf } from '../../platform/context.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { markReplayed } from '../../platform/idempotency.js';

/**
 * Idempotency keys of the economy's writes (docs/economy.md, "Idempotency"), with Stripe's
 * semantics. The key is claimed by the first statement of the write's transaction and its answer
 * stored by the last, so the answer commits with the effects or not at all (a refusal stores
 * nothing and a retry runs afresh). A retry racing the original blocks on the claimed row until
 * the original ends, then replays its answer (or runs, when the original was refused): it never
 * executes twice.
 */

/** What a write did: its answer, and what to announce once it committed. */
export interface Outcome<T> {
  answer: T;
  afterCommit?: () => Promise<void>;
  /**
   * Set when the write stored the answer under its claim itself, in its last statement (a
   * purchase, with its ledger transaction): one statement fewer on the hottest write.
   */
  stored?: true;
}

/** The key a write runs under: a write that stores its own answer names this row. */
export interface Claim {
  userId: string;
  key: string;
}

export interface KeyedInput {
  idempotency_key: string;
}

export class IdempotentWrites {
  constructor(private readonly ttlHours: number) {}

  /**
   * Runs `write` in a transaction under the caller's key, or replays the answer stored for the
   * key. `operation` and the rest of the input are the request's fingerprint: the same key with
   * another request answers 422 IDEMPOTENCY_KEY_REUSED and does nothing.
   */
  async run<T extends object>(
    ctx: Ctx,
    operation: string,
    input: KeyedInput,
    write: (data: DataAccess, claim: Claim) => Promise<Outcome<T>>,
  ): Promise<T> {
    const userId = callerOf(ctx).id;
    const { idempotency_key: key, ...request } = input;
    const fingerprint = createHash('sha256')
      .update(`${operation}\n${canonicalJson(request)}`)
      .digest('base64url');
    const now = ctx.now();
    const result = await transaction(ctx.data, async (tx) => {
      const claimed = await executeBound(
        tx,
        `insert into economy_idempotency_keys (user_id, key, fingerprint, created_at) values ($1, $2, $3, $4)
         on conflict (user_id, key) do update
           set fingerprint = excluded.fingerprint, response = null, created_at = excluded.created_at
           where economy_idempotency_keys.created_at < $5
         returning 1`,
        [userId, key, fingerprint, now, new Date(now.getTime() - this.ttlHours * 3_600_000)],
      );
      if (claimed.length === 0) return { replay: await this.stored(tx, userId, key, fingerprint) };
      const outcome = await write(tx, { userId, key });
      if (!outcome.stored) {
        await executeBound(
          tx,
          'update economy_idempotency_keys set response = $3 where user_id = $1 and key = $2',
          [userId, key, JSON.stringify(outcome.answer)],
        );
      }
      return { outcome };
    });
    if ('replay' in result) return markReplayed(result.replay as T);
    await result.outcome.afterCommit?.();
    return result.outcome.answer;
  }

  private async stored(data: DataAccess, userId: string, key: string, fingerprint: string): Promise<object> {
    const [row] = await executeBound<{ fingerprint: string; response: object | null }>(
      data,
      'select fingerprint, response from economy_idempotency_keys where user_id = $1 and key = $2',
      [userId, key],
    );
    if (row && row.fingerprint !== fingerprint) {
      throw new AppError(
        ErrorCode.IDEMPOTENCY_KEY_REUSED,
        'This Idempotency-Key was used for another request; use a new key for a new request.',
      );
    }
    // A committed claim always carries its answer; a row without one is a claim still open in a
    // transaction this one could not wait for.
    if (!row?.response) {
      throw new AppError(
        ErrorCode.IDEMPOTENCY_KEY_IN_USE,
        'A request with this Idempotency-Key is still being processed; retry it.',
      );
    }
    return row.response;
  }
}

/** Deletes keys older than the TTL, a bounded batch at a time; returns how many went. */
export async function pruneIdempotencyKeys(data: DataAccess, before: Date, batch: number): Promise<number> {
  const rows = await executeBound(
    data,
    `delete from economy_idempotency_keys where ctid = any(array(
       select ctid from economy_idempotency_keys where created_at < $1 limit $2)) returning 1`,
    [before, batch],
  );
  return rows.length;
}

/** JSON with object keys sorted at every depth and undefined members left out. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
