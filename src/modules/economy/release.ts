import type { EventBus } from '../../platform/bus.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import type { Database } from '../../platform/db.js';
import type { Logger } from '../../platform/log.js';
import { pruneIdempotencyKeys } from './idempotency.js';
import { type EntryRow, lockAccounts, post } from './ledger.repository.js';
import { dueHolds, markReleased } from './purchases.repository.js';
import { balanceAnnouncements } from './views.js';

/**
 * Releases held purchases whose hold ended: each one's seller share moves from creator_pending to
 * creator_available in a `release` transaction naming the purchase, exactly once (the purchase row
 * is locked and marked in the same transaction). All accounts of a batch (and `alsoLock`, the
 * accounts the caller moves next) are locked in one sorted statement, so transactions on several
 * nodes never wait for each other in a cycle. The balances returned are the locked accounts' after
 * the releases.
 */
export async function releaseHolds(
  data: DataAccess,
  options: {
    at: Date;
    sellerId: string | null;
    limit: number;
    skipLocked: boolean;
    alsoLock?: readonly string[];
  },
): Promise<{ released: number; entries: EntryRow[]; balances: Map<string, number> }> {
  const due = await dueHolds(data, options);
  const balances = await lockAccounts(data, [
    ...due.flatMap((p) => [p.seller_pending_account_id, p.seller_available_account_id]),
    ...(options.alsoLock ?? []),
  ]);
  if (due.length === 0) return { released: 0, entries: [], balances };
  const entries: EntryRow[] = [];
  const releases: { purchaseId: string; transactionId: string | null }[] = [];
  for (const purchase of due) {
    const amount = Number(purchase.seller_amount);
    if (amount === 0) {
      releases.push({ purchaseId: purchase.id, transactionId: null });
      continue;
    }
    const posted = await post(data, { kind: 'release', purchaseId: purchase.id, at: options.at }, [
      { accountId: purchase.seller_pending_account_id, kind: 'release', amount: -amount },
      { accountId: purchase.seller_available_account_id, kind: 'release', amount },
    ]);
    entries.push(...posted.entries);
    releases.push({ purchaseId: purchase.id, transactionId: posted.transactionId });
  }
  await markReleased(data, releases, options.at);
  for (const entry of entries) balances.set(entry.account_id, Number(entry.balance_after));
  return { released: due.length, entries, balances };
}

/** Purchases one job transaction releases by default; the job runs batches until none is due. */
const BATCH = 200;
const PRUNE_BATCH = 5_000;

/**
 * The release job every node runs every ECONOMY_RELEASE_INTERVAL_SECONDS. Nodes share the work
 * through `for update skip locked`, and a node that was down finds the holds that came due
 * meanwhile on its next pass. It also deletes idempotency keys past their TTL.
 */
export class ReleaseJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      db: Database;
      bus: EventBus;
      log: Logger;
      intervalSeconds: number;
      idempotencyTtlHours: number;
      /** Purchases per transaction (BATCH unless a test makes the batches small). */
      batch?: number;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.runOnce(), this.deps.intervalSeconds * 1000);
    this.timer.unref();
    void this.runOnce();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass (a pass already running is joined); returns when it is done. Errors are logged. */
  runOnce(): Promise<void> {
    this.running ??= this.pass()
      .catch((err) => this.deps.log.warn({ err }, 'the economy release pass failed; the next one retries'))
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  private async pass(): Promise<void> {
    const now = () => new Date();
    const batch = this.deps.batch ?? BATCH;
    for (;;) {
      const at = now();
      const { released, entries } = await transaction(this.deps.db.data, (tx) =>
        releaseHolds(tx, { at, sellerId: null, limit: batch, skipLocked: true }),
      );
      await this.deps.bus.publishAllCommitted(balanceAnnouncements(entries), this.deps.log);
      if (released < batch) break;
    }
    const before = new Date(now().getTime() - this.deps.idempotencyTtlHours * 3_600_000);
    while ((await pruneIdempotencyKeys(this.deps.db.data, before, PRUNE_BATCH)) === PRUNE_BATCH) {}
  }
}
