import { batched } from '../../platform/batcher.js';
import type { DataAccess } from '../../platform/data-access.js';
import type { Logger } from '../../platform/log.js';
import { RepeatingPass } from '../../platform/repeating-pass.js';
import type { Resolve } from './address-guard.js';
import {
  type ClaimedDelivery,
  claimDue,
  type DeliveryStatus,
  type EndedAttempt,
  pruneFinished,
  recordAttempts,
} from './deliveries.repository.js';
import { nextAttemptAfterFailure } from './retry-schedule.js';
import { attemptDelivery } from './signed-request.js';
import { signedHeaders } from './signing.js';

/** Attempts running at once on a node; a claim takes no more than there is room for. */
const CONCURRENCY = 32;
/** With more due, the room an ended attempt waits for before claiming again: claims stay batches. */
const CLAIM_AT_ROOM = CONCURRENCY / 2;
/** A claimed attempt's lease past its timeout: a node that died mid-attempt leaves it due then. */
const LEASE_MARGIN_MS = 30_000;
/**
 * Outcome statements running at once; the attempts that end meanwhile are written together by the
 * next one, so a busy node writes a batch of outcomes per statement rather than one each.
 */
const OUTCOME_WRITES_AT_ONCE = 2;
/** Deliveries one retention statement removes. */
const PRUNE_BATCH = 1000;
/** How often a node removes what retention let go: not on every pass, which runs per attempt. */
const PRUNE_INTERVAL_MS = 60_000;
/**
 * The due times of its own retries a node keeps to wake for, the earliest ones: past that (a
 * failing endpoint's backlog), the later ones wait for a pass that runs anyway, at most intervalMs.
 */
const RETRIES_KEPT = 1000;

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
  /**
   * The longest between two passes: the safety net for what nothing on this node wakes it for
   * (a retry another node wrote and could not make, a lease that lapsed, a lost wake).
   */
  intervalMs: number;
  /** Told of each attempt's outcome as it is written: the delivery's status after it. */
  onOutcome?: (status: DeliveryStatus) => void;
}

/**
 * The delivery job every node runs: a pass claims as many due deliveries as there is room for
 * (skip locked, so each attempt runs on one node) and starts their attempts, each writing its own
 * outcome, without waiting for them: a receiver that holds its answer delays no other delivery.
 * Then it removes what retention let go. `wake` runs a pass now: a fan-out or a redelivery made
 * something due, or attempts ended and freed half the room while more were due than there was room for.
 * A failed attempt whose retry this node wrote wakes it when the retry is due (one timer, for the
 * earliest); what nothing wakes waits for the pass every `intervalMs`.
 */
export class DeliveryWorker {
  private readonly repeating: RepeatingPass;
  /** Aborted by stop(): the attempts under way end at once, their leases hand them on. */
  private stopped = new AbortController();
  private readonly attempts = new Set<Promise<void>>();
  private prunedAt = Number.NEGATIVE_INFINITY;
  /** The due times (ms, by the clock) of the retries this node wrote, earliest first. */
  private retriesDue: number[] = [];
  /** The last claim filled the room there was: once half the room is free again, a pass runs at once. */
  private backlog = false;
  private readonly recordAttempt = batched(
    (ended: readonly EndedAttempt[]) => recordAttempts(this.options.data(), ended),
    { maxSize: CONCURRENCY, maxInFlight: OUTCOME_WRITES_AT_ONCE },
  );

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.repeating = new RepeatingPass(() => this.timedPass(), {
      intervalMs: options.intervalMs,
      log: options.log,
      name: 'a webhook delivery pass',
    });
  }

  start(): void {
    this.stopped = new AbortController();
    this.repeating.start();
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    await this.repeating.stop();
    await Promise.all(this.attempts);
  }

  wake(): void {
    this.repeating.wake();
  }

  /** Runs a pass, then waits for the attempts it started (tests). */
  async runUntilIdle(): Promise<void> {
    await this.runOnce();
    await Promise.all(this.attempts);
  }

  /**
   * A timer's pass, answering the time to the earliest retry this node wrote that its claim did not
   * take. Only retries due when the pass began are forgotten: one that came due during the pass (a
   * timer that fired before the clock reached the retry, a slow claim) is still waited for.
   */
  private async timedPass(): Promise<number> {
    const began = this.options.clock().getTime();
    await this.runOnce();
    const first = this.retriesDue.findIndex((at) => at > began);
    this.retriesDue = first < 0 ? [] : this.retriesDue.slice(first);
    const next = this.retriesDue[0];
    return next === undefined ? this.options.intervalMs : Math.max(0, next - this.options.clock().getTime());
  }

  /** A retry this node wrote is due at `at`: a pass runs by then. */
  private retryAt(at: number): void {
    const times = this.retriesDue;
    let i = times.length;
    while (i > 0 && (times[i - 1] as number) > at) i--;
    if (i >= RETRIES_KEPT) return;
    times.splice(i, 0, at);
    if (times.length > RETRIES_KEPT) times.pop();
    this.repeating.wakeWithin(at - this.options.clock().getTime());
  }

  /** Starts attempts of what is due while there is room, then prunes when it is time (the timer, and tests). */
  async runOnce(): Promise<void> {
    const { data, clock, settings } = this.options;
    for (;;) {
      const room = CONCURRENCY - this.attempts.size;
      this.backlog = room <= 0;
      if (this.repeating.stopping || room <= 0) break;
      const now = clock();
      const leaseUntil = new Date(now.getTime() + settings.timeoutSeconds * 1000 + LEASE_MARGIN_MS);
      const claimed = await claimDue(data(), now, leaseUntil, room);
      for (const delivery of claimed) this.begin(delivery);
      if (claimed.length < room) break;
    }
    const now = clock().getTime();
    if (now - this.prunedAt < PRUNE_INTERVAL_MS) return;
    this.prunedAt = now;
    const before = new Date(now - settings.retentionDays * 86_400_000);
    while ((await pruneFinished(data(), before, PRUNE_BATCH)) === PRUNE_BATCH) {
      if (this.repeating.stopping) return;
    }
  }

  private begin(delivery: ClaimedDelivery): void {
    const attempt = this.attempt(delivery)
      // Never a receiver's doing (those are outcomes): logged, and the lease hands the delivery on.
      .catch((err: unknown) =>
        this.options.log.warn({ err, delivery_id: delivery.id }, 'webhooks: an attempt failed'),
      )
      .finally(() => {
        this.attempts.delete(attempt);
        if (this.backlog && CONCURRENCY - this.attempts.size >= CLAIM_AT_ROOM) this.wake();
      });
    this.attempts.add(attempt);
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
      await this.recordAttempt({
        claimed: delivery,
        status,
        statusCode: outcome.status,
        error: outcome.error,
        nextAttemptAt: next,
        at,
      });
      this.options.onOutcome?.(status);
      if (next) this.retryAt(next.getTime());
    } catch (err) {
      // The attempt's lease hands the delivery to the next pass of any node.
      this.options.log.warn({ err, delivery_id: delivery.id }, 'webhooks: could not record an attempt');
    }
  }
}
