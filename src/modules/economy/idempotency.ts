import { createHash } from 'node:crypto';
import type { Operation, RestBinding } from '../../../protocol/operation.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { markReplayed } from '../../platform/idempotency.js';

/**
 * Idempotency keys of the economy's writes (docs/economy.md, "Idempotency"), with Stripe's
 * semantics, and every statement on their table. The key is claimed by the first statement of the
 * write's transaction and the write stores its answer under the claim before it returns, so the
 * answer commits with the effects or not at all (a refusal stores nothing and a retry runs afresh).
 * A retry racing the original blocks on the claimed row until the original ends, then replays its
 * answer (or runs, when the original was refused): it never executes twice.
 */

/** A write's operation, as declared in protocol/ with the Idempotency-Key. */
export type KeyedOperation = Pick<Operation, 'name'> & {
  readonly rest: RestBinding & { idempotencyKey: true };
};

export interface KeyedInput {
  idempotency_key: string;
}

/**
 * Whose key it is: a user's (the caller of every write of the API), or an extension's (its
 * `ctx.economy.grant`, whoever the grant names). Keys are unique per owner.
 */
export type KeyOwner = { kind: 'user'; id: string } | { kind: 'extension'; name: string };

/** Where a write runs and whose key it claims, when no caller's Ctx says it. */
export interface KeyScope {
  data: DataAccess;
  owner: KeyOwner;
  now: Date;
}

declare const storedUnderKey: unique symbol;

/** An answer stored under the write's key; only `ClaimedKey.store` makes one. */
export interface StoredAnswer<T> {
  readonly value: T;
  readonly [storedUnderKey]: true;
}

/** The caller's key, claimed by the write's transaction. */
export interface ClaimedKey {
  /**
   * Stores the write's answer under the key, in the write's transaction: a retry replays it. The
   * write decides when, so that a statement locking hot rows can still come after it.
   */
  store<T extends object>(answer: T): Promise<StoredAnswer<T>>;
}

/** What a write did: its stored answer, and what to announce once it committed. */
export interface Outcome<T> {
  answer: StoredAnswer<T>;
  afterCommit?: () => Promise<void>;
}

export class IdempotentWrites {
  constructor(private readonly ttlHours: number) {}

  /**
   * Runs `write` once per key of the caller: in a transaction that claims the key first, or not at
   * all when the key holds an answer, which is then replayed. The operation's name and the rest of
   * the input are the request's fingerprint: the same key with another request answers 422
   * IDEMPOTENCY_KEY_REUSED and does nothing.
   */
  runOnce<T extends object>(
    ctx: Ctx,
    operation: KeyedOperation,
    input: KeyedInput,
    write: (tx: DataAccess, key: ClaimedKey) => Promise<Outcome<T>>,
  ): Promise<T> {
    const owner: KeyOwner = { kind: 'user', id: callerOf(ctx).id };
    return this.runOnceAs({ data: ctx.data, owner, now: ctx.now() }, operation.name, input, write);
  }

  /**
   * `runOnce` for a key `scope.owner` holds, with `name` beginning the fingerprint: the writes of
   * no caller (an extension's grant). A replayed answer is marked (`wasReplayed`).
   */
  async runOnceAs<T extends object>(
    scope: KeyScope,
    name: string,
    input: KeyedInput,
    write: (tx: DataAccess, key: ClaimedKey) => Promise<Outcome<T>>,
  ): Promise<T> {
    const { idempotency_key: key, ...request } = input;
    const fingerprint = createHash('sha256')
      .update(`${name}\n${canonicalJson(request)}`)
      .digest('base64url');
    const { owner, now } = scope;
    const expiredBefore = new Date(now.getTime() - this.ttlHours * 3_600_000);
    const result = await transaction(scope.data, async (tx) => {
      if (!(await claimKey(tx, { owner, key, fingerprint, now, expiredBefore }))) {
        return { replay: await answerToReplay(tx, owner, key, fingerprint) };
      }
      return { outcome: await write(tx, { store: (answer) => storeAnswer(tx, owner, key, answer) }) };
    });
    if ('replay' in result) return markReplayed(result.replay as T);
    await result.outcome.afterCommit?.();
    return result.outcome.answer.value;
  }
}

/**
 * The statements on one owner's keys, naming its column (migration 0032): `user_id` and
 * `extension` each have their unique constraint with `key`, which the claim's conflict names. Fixed
 * texts, so each is prepared once.
 */
function statementsOn(column: 'user_id' | 'extension') {
  return {
    claim: `insert into economy_idempotency_keys (${column}, key, fingerprint, created_at) values ($1, $2, $3, $4)
     on conflict (${column}, key) do update
       set fingerprint = excluded.fingerprint, response = null, created_at = excluded.created_at
       where economy_idempotency_keys.created_at < $5
     returning 1`,
    read: `select fingerprint, response from economy_idempotency_keys where ${column} = $1 and key = $2`,
    store: `update economy_idempotency_keys set response = $3 where ${column} = $1 and key = $2`,
  };
}

const STATEMENTS = { user: statementsOn('user_id'), extension: statementsOn('extension') };

/** The owner's statements and the value of its column. */
const ownerOf = (owner: KeyOwner) =>
  owner.kind === 'user'
    ? { sql: STATEMENTS.user, id: owner.id }
    : { sql: STATEMENTS.extension, id: owner.name };

/**
 * Claims the key for this transaction: a new row, or a row past its TTL taken over (its answer
 * cleared). False when the key holds a live claim; a claim still open in another transaction is
 * waited for, so the answer is then committed (or the row gone, and the key claimed).
 */
async function claimKey(
  tx: DataAccess,
  claim: { owner: KeyOwner; key: string; fingerprint: string; now: Date; expiredBefore: Date },
): Promise<boolean> {
  const { sql, id } = ownerOf(claim.owner);
  const claimed = await executeBound(tx, sql.claim, [
    id,
    claim.key,
    claim.fingerprint,
    claim.now,
    claim.expiredBefore,
  ]);
  return claimed.length > 0;
}

/**
 * The answer stored under a key this request could not claim, for its retry to replay; refuses a
 * key used for another request (422) and a claim without an answer (409).
 */
async function answerToReplay(
  tx: DataAccess,
  owner: KeyOwner,
  key: string,
  fingerprint: string,
): Promise<object> {
  const { sql, id } = ownerOf(owner);
  const [row] = await executeBound<{ fingerprint: string; response: object | null }>(tx, sql.read, [id, key]);
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

async function storeAnswer<T extends object>(
  tx: DataAccess,
  owner: KeyOwner,
  key: string,
  answer: T,
): Promise<StoredAnswer<T>> {
  const { sql, id } = ownerOf(owner);
  await executeBound(tx, sql.store, [id, key, JSON.stringify(answer)]);
  return { value: answer } as StoredAnswer<T>;
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
