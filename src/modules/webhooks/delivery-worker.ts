import type { DataAccess } from '../../platform/data-access.js';
import type { Logger } from '../../platform/log.js';
import { RepeatingPass } from '../../platform/repeating-pass.js';
import type { Resolve } from './address-guard.js';
import { type ClaimedDelivery, claimDue, pruneFinished, recordAttempt } from './deliveries.repository.js';
import { nextAttemptAfterFailure } from './retry-schedule.js';
import { attemptDelivery } from './signed-request.js';
import { signedHeaders } from './signing.js';

/** Deliveries one claim takes, all attempted at once. */
const BATCH = 32;
/** A claimed attempt's lease past its timeout: a node that died mid-attempt leaves it due then. */
const LEASE_MARGIN_MS = 30_000;
/** Deliveries one retention statement removes. */
const PRUNE_BATCH = 1000;

export interface DeliverySettings {
  timeoutSeconds: number;
  retryBaseSeconds: number;
  maxAttempts: number;
  allowPrivateNetworks: boolean;
  retentionDays: number;
  /** Injected by tests; the system resolver otherwise. */
  resolve?: Resolve;
}

export interface DeliveryWorkerOptions {
  data: () => DataAccess;
  log: Pick<Logger, 'warn'>;
  clock: () => Date;
  settings: DeliverySettings;
  intervalMs: number;
}

/**
 * The delivery job every node runs: a pass claims the due deliveries (skip locked, so each
 * attempt runs on one node), attempts them at once, writes each outcome, and goes on while
 * claims come back full; then it removes what retention let go. `wake` runs a pass now, when a
 * fan-out or a redelivery made something due.
 */
export class DeliveryWorker {
  private readonly repeating: RepeatingPass;
  /** Aborted by stop(): the attempts under way end at once, their leases hand them on. */
  private stopped = new AbortController();

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.repeating = new RepeatingPass(() => this.runOnce(), {
      intervalMs: options.intervalMs,
      log: options.log,
      name: 'a webhook delivery pass',
    });
  }

  start(): void {
    this.stopped = new AbortController();
    this.repeating.start();
  }

  stop(): Promise<void> {
    this.stopped.abort();
    return this.repeating.stop();
  }

  wake(): void {
    this.repeating.wake();
  }

  /** Attempts what is due until nothing is, then prunes (tests, and the timer). */
  async runOnce(): Promise<void> {
    const { data, clock, settings } = this.options;
    for (;;) {
      if (this.repeating.stopping) return;
      const now = clock();
      const leaseUntil = new Date(now.getTime() + settings.timeoutSeconds * 1000 + LEASE_MARGIN_MS);
      const claimed = await claimDue(data(), now, leaseUntil, BATCH);
      await Promise.all(claimed.map((delivery) => this.attempt(delivery)));
      if (claimed.length < BATCH) break;
    }
    const before = new Date(clock().getTime() - settings.retentionDays * 86_400_000);
    while ((await pruneFinished(data(), before, PRUNE_BATCH)) === PRUNE_BATCH) {
      if (this.repeating.stopping) return;
    }
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const { clock, settings } = this.options;
    const now = clock();
    const previous =
      delivery.previous_secret && delivery.previous_secret_until && delivery.previous_secret_until > now
        ? delivery.previous_secret
        : undefined;
    const headers = signedHeaders(delivery.id, delivery.body, [delivery.secret, previous], now);
    const outcome = await attemptDelivery(delivery.url, delivery.body, headers, {
      timeoutMs: settings.timeoutSeconds * 1000,
      allowPrivateNetworks: settings.allowPrivateNetworks,
      signal: this.stopped.signal,
      ...(settings.resolve ? { resolve: settings.resolve } : {}),
    });
    // Cut short by stop(): not an outcome of the receiver's; the lease hands the delivery on.
    if (this.stopped.signal.aborted) return;
    const at = clock();
    const next =
      outcome.error === null
        ? null
        : nextAttemptAfterFailure(
            delivery.attempts - delivery.budget_start,
            { baseSeconds: settings.retryBaseSeconds, maxAttempts: settings.maxAttempts },
            at,
          );
    const status = outcome.error === null ? 'delivered' : next ? 'pending' : 'failed';
    try {
      await recordAttempt(this.options.data(), delivery, {
        status,
        statusCode: outcome.status,
        error: outcome.error,
        nextAttemptAt: next,
        at,
      });
    } catch (err) {
      // The attempt's lease hands the delivery to the next pass of any node.
      this.options.log.warn({ err, delivery_id: delivery.id }, 'webhooks: could not record an attempt');
    }
  }
}
