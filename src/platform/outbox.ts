import { batched, STATEMENTS_AT_ONCE } from './batcher.js';
import type { EventBus } from './bus.js';
import { afterCommit, type DataAccess } from './data-access.js';
import { newId } from './ids.js';
import type { Logger } from './log.js';
import { type DomainEvent, eventOf, type OutboxConsumer } from './outbox-consumer.js';
import {
  type ClaimedDelivery,
  claimDue,
  type FinishedDelivery,
  finishDeliveries,
  insertEvents,
  pruneOutbox,
  recordEventsSql,
  retryLater,
} from './outbox-store.js';
import { settledWithin, WakeTimers, withinLease } from './outbox-waits.js';

export type { DomainEvent, OutboxConsumer } from './outbox-consumer.js';

export interface OutboxOptions {
  /** The database's root handle: claims and outcomes run on it, each a statement of its own. */
  data: DataAccess;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /**
   * Where a node that recorded events says so once they are committed, so every node with
   * consumers claims them at once rather than at its next poll; without it only this node is woken.
   */
  bus?: Pick<EventBus, 'publish' | 'subscribe'>;
  /**
   * How often a node with consumers looks for due deliveries when nothing woke it: the safety net
   * for an announcement lost with Redis, a retry scheduled by a node that stopped, and a lease
   * that lapsed. Announcements and this node's own retries wake it without waiting for it.
   */
  pollMs?: number;
  /** The least time between two announcements of committed events from one node. */
  announceEveryMs?: number;
  /** The most deliveries one claim takes. */
  batchSize?: number;
  /** The most handlers running at once on this node; a claim takes no more than there is room for. */
  concurrency?: number;
  /** How long `stop()` waits for the running handlers. */
  stopTimeoutMs?: number;
  /** The delay before the first retry, doubled for each further one and capped at the lease. */
  backoffBaseMs?: number;
  /** How often each node prunes what no node will finish. */
  pruneIntervalMs?: number;
  /** A delivery no node claimed for this long past its due time is dropped: no node takes its consumer. */
  abandonAfterSeconds?: number;
}

/** Where nodes announce committed events; the payload is the announcing outbox's own token. */
export const OUTBOX_DUE_TOPIC = 'outbox:due';

/**
 * The transactional outbox (docs/architecture.md, "Domain events and the outbox"): an event is
 * recorded in the transaction that commits its change, with a delivery row per consumer of its
 * type, and handled after the commit by whichever node claims the delivery first. A claim leases
 * the delivery for the consumer's `leaseSeconds`: a node that stops before its handler finished
 * leaves it to any node once the lease lapses, so delivery is at least once. Every node with
 * consumers polls; a node without any runs no statement at all, and recording for a type nobody
 * consumes costs nothing. A node that records events announces them on the bus once committed (at
 * most once per `announceEveryMs`, the last of a burst included), which wakes every node's claim,
 * and a node that makes a failed delivery due again later wakes itself at that time: the poll is
 * only the fallback for what neither wakes (an announcement lost with Redis, a retry whose node
 * stopped, a lapsed lease), so a node at rest runs a claim only every `pollMs`.
 */
export class Outbox {
  private readonly consumers = new Map<string, OutboxConsumer>();
  /** Each consumed type's consumers, whose names the recording statement binds. */
  private readonly consumersByType = new Map<string, OutboxConsumer[]>();
  /** Each consumed type's recording statement and the names it binds, made once its consumers are known. */
  private readonly recordingByType = new Map<string, { sql: string; names: string[] }>();
  private readonly options: Required<Omit<OutboxOptions, 'data' | 'log' | 'bus'>>;
  private state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  private claimNames: string[] = [];
  private claimLeases: number[] = [];
  private pollTimer: NodeJS.Timeout | undefined;
  /** One per retry this node wrote: each wakes the claim once the retry is due. */
  private readonly retryWakes = new WakeTimers(() => this.wake());
  private pruneTimer: NodeJS.Timeout | undefined;
  /** The claim in flight, if any: polls never overlap, and stop() waits for it. */
  private claiming: Promise<void> | undefined;
  private pruning: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private readonly running = new Set<Promise<void>>();
  /** Deliveries the running handlers hold: the room a claim has is what `concurrency` leaves. */
  private held = 0;
  /** The last claim filled its room: poll again as soon as a handler ends. */
  private backlog = false;
  /** The last claim failed (the database is unreachable): logged once until one succeeds. */
  private failing = false;
  /** When the scheduled poll runs (ms since the epoch). */
  private pollDueAt = Number.POSITIVE_INFINITY;
  /** An announcement came during a claim: claim again once it ends. */
  private woken = false;
  /** Tells this outbox's own announcements from other nodes'. */
  private readonly token = newId();
  /** performance.now() of the last announcement: a monotonic clock, which a wall clock set back (or a test's fake Date) cannot stall. */
  private lastAnnounced = Number.NEGATIVE_INFINITY;
  /** The announcement of the events committed since the last one, when that was too recent. */
  private trailingAnnouncement: NodeJS.Timeout | undefined;
  private unsubscribe: Promise<() => Promise<void>> | undefined;

  private readonly deps: Pick<OutboxOptions, 'data' | 'log' | 'bus'>;
  /** Ended deliveries are removed together: one statement for all those ended meanwhile. */
  private readonly finish: (delivery: FinishedDelivery) => Promise<undefined>;

  constructor({ data, log, bus, ...options }: OutboxOptions) {
    this.deps = { data, log, bus };
    this.options = {
      pollMs: 5000,
      announceEveryMs: 10,
      batchSize: 32,
      concurrency: 16,
      stopTimeoutMs: 5000,
      backoffBaseMs: 1000,
      pruneIntervalMs: 60_000,
      abandonAfterSeconds: 86_400,
      ...options,
    };
    this.finish = batched((done: readonly FinishedDelivery[]) => finishDeliveries(data, done), {
      maxSize: this.options.concurrency,
      maxInFlight: STATEMENTS_AT_ONCE,
    });
  }

  /** Adds a consumer of its type's events; only before start(). */
  consume(consumer: OutboxConsumer): void {
    if (this.state !== 'idle') throw new Error(`Outbox consumer ${consumer.name} added after start().`);
    if (this.consumers.has(consumer.name)) throw new Error(`Outbox consumer ${consumer.name} added twice.`);
    const { leaseSeconds, maxAttempts } = consumer.retry;
    if (!(leaseSeconds > 0) || !Number.isInteger(maxAttempts) || maxAttempts < 1) {
      throw new Error(`Outbox consumer ${consumer.name}: leaseSeconds must be > 0 and maxAttempts >= 1.`);
    }
    this.consumers.set(consumer.name, consumer);
    const ofType = [...(this.consumersByType.get(consumer.type) ?? []), consumer];
    this.consumersByType.set(consumer.type, ofType);
    this.recordingByType.set(consumer.type, {
      sql: recordEventsSql(ofType.map((each) => each.onlyIf)),
      names: ofType.map((each) => each.name),
    });
  }

  /** Whether any consumer takes `type`: the recorders skip all their work when none does. */
  hasConsumers(type: string): boolean {
    return this.recordingByType.has(type);
  }

  /** Inside the committing transaction `tx`. Nothing at all when no consumer takes `type`. */
  async record(tx: DataAccess, type: string, data: unknown): Promise<void> {
    const recording = this.recordingByType.get(type);
    if (!recording) return;
    const written = await insertEvents(
      tx,
      recording.sql,
      [newId()],
      type,
      JSON.stringify([data]),
      recording.names,
    );
    if (written > 0) afterCommit(tx, this.announce);
  }

  /** `record` for several events of one type, in one statement (a batch of stored messages). */
  async recordAll(tx: DataAccess, type: string, data: readonly unknown[]): Promise<void> {
    const recording = this.recordingByType.get(type);
    if (!recording || data.length === 0) return;
    const written = await insertEvents(
      tx,
      recording.sql,
      data.map(() => newId()),
      type,
      JSON.stringify(data),
      recording.names,
    );
    if (written > 0) afterCommit(tx, this.announce);
  }

  /** Committed events are due: wakes this node now and the others through the bus, throttled. */
  private readonly announce = (): void => {
    if (this.trailingAnnouncement) return;
    const wait = this.lastAnnounced + this.options.announceEveryMs - performance.now();
    if (wait <= 0) {
      this.announceNow();
      return;
    }
    this.trailingAnnouncement = setTimeout(() => {
      this.trailingAnnouncement = undefined;
      this.announceNow();
    }, wait);
    this.trailingAnnouncement.unref();
  };

  private announceNow(): void {
    if (this.state === 'stopped') return;
    this.lastAnnounced = performance.now();
    this.wake();
    // Lost with Redis, the announcement leaves the events to the other nodes' polls.
    this.deps.bus?.publish(OUTBOX_DUE_TOPIC, { t: 'outbox.due', d: this.token }).catch(() => undefined);
  }

  /** Claims now, or right after the claim in flight: deliveries may be due that it did not see. */
  private wake(): void {
    if (this.state !== 'running' || this.consumers.size === 0) return;
    if (this.claiming) this.woken = true;
    else if (this.pollDueAt > performance.now()) this.schedulePoll(0);
  }

  /** Starts polling, when this node has consumers; once the service listens. */
  start(): void {
    if (this.state !== 'idle') throw new Error('Outbox started twice.');
    this.state = 'running';
    if (this.consumers.size === 0) return;
    for (const consumer of this.consumers.values()) {
      this.claimNames.push(consumer.name);
      this.claimLeases.push(consumer.retry.leaseSeconds);
    }
    this.unsubscribe = this.deps.bus
      ?.subscribe(OUTBOX_DUE_TOPIC, (event) => {
        if (event.d !== this.token) this.wake();
      })
      .catch((err) => {
        this.deps.log.warn({ err }, 'outbox: not woken by other nodes; polling only');
        return async () => undefined;
      });
    this.schedulePoll(0);
    this.pruneTimer = setInterval(() => this.prune(), this.options.pruneIntervalMs);
    this.pruneTimer.unref();
  }

  /**
   * Stops polling and waits for the claim and the handlers running, up to `stopTimeoutMs`; what a
   * handler finishes later is not written, and its delivery is claimed again once its lease lapses.
   */
  stop(): Promise<void> {
    this.stopping ??= this.halt();
    return this.stopping;
  }

  private async halt(): Promise<void> {
    clearTimeout(this.trailingAnnouncement);
    if (this.state === 'idle') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    clearTimeout(this.pollTimer);
    this.retryWakes.clear();
    clearInterval(this.pruneTimer);
    await (await this.unsubscribe)?.().catch(() => undefined);
    const deadline = performance.now() + this.options.stopTimeoutMs;
    for (;;) {
      const waiting = [this.claiming, this.pruning, ...this.running].filter((task) => task !== undefined);
      if (waiting.length === 0 || performance.now() >= deadline) break;
      await settledWithin(waiting, deadline - performance.now());
    }
    this.state = 'stopped';
  }

  private schedulePoll(delayMs: number): void {
    if (this.state !== 'running') return;
    clearTimeout(this.pollTimer);
    this.pollDueAt = performance.now() + delayMs;
    this.pollTimer = setTimeout(() => this.poll(), delayMs);
    this.pollTimer.unref();
  }

  private poll(): void {
    this.pollDueAt = Number.POSITIVE_INFINITY;
    if (this.state !== 'running' || this.claiming) return;
    this.woken = false;
    const room = Math.min(this.options.batchSize, this.options.concurrency - this.held);
    if (room <= 0) {
      // Every slot is busy: the first handler to end polls again.
      this.backlog = true;
      return;
    }
    this.claiming = this.claim(room).finally(() => {
      this.claiming = undefined;
      this.schedulePoll(this.backlog || this.woken ? 0 : this.options.pollMs);
    });
  }

  /** Claims up to `room` due deliveries and starts their handlers; never rejects. */
  private async claim(room: number): Promise<void> {
    let claimed: ClaimedDelivery[];
    try {
      claimed = await claimDue(this.deps.data, this.claimNames, this.claimLeases, room);
    } catch (err) {
      // The database is gone for now: say so once, and keep polling until it is back.
      if (!this.failing) this.deps.log.warn({ err }, 'outbox: could not claim deliveries; retrying');
      this.failing = true;
      this.backlog = false;
      return;
    }
    if (this.failing) this.deps.log.info('outbox: claiming deliveries again');
    this.failing = false;
    this.backlog = claimed.length === room;
    const batches = new Map<string, ClaimedDelivery[]>();
    for (const delivery of claimed) {
      // A claim past the last attempt is one whose earlier leases lapsed (its nodes died, or its
      // handler hung): dropped without running it again.
      const lapsed =
        delivery.attempts > (this.consumers.get(delivery.consumer) as OutboxConsumer).retry.maxAttempts;
      if (lapsed) this.startTask([delivery], new Error('the earlier attempts outlived their lease'));
      else batches.set(delivery.consumer, [...(batches.get(delivery.consumer) ?? []), delivery]);
    }
    for (const [name, deliveries] of batches) {
      if ((this.consumers.get(name) as OutboxConsumer).handleMany) this.startTask(deliveries);
      else for (const delivery of deliveries) this.startTask([delivery]);
    }
  }

  /** Runs one handler on deliveries of one consumer (all of them at once: handleMany), or drops them. */
  private startTask(deliveries: ClaimedDelivery[], dropped?: Error): void {
    this.held += deliveries.length;
    const task = this.deliver(deliveries, dropped).finally(() => {
      this.held -= deliveries.length;
      this.running.delete(task);
      if (this.backlog && !this.claiming) this.schedulePoll(0);
    });
    this.running.add(task);
  }

  /** Runs the consumer's handler on claimed deliveries and writes their outcomes; never rejects. */
  private async deliver(deliveries: ClaimedDelivery[], dropped?: Error): Promise<void> {
    const consumer = this.consumers.get((deliveries[0] as ClaimedDelivery).consumer) as OutboxConsumer;
    let failure: unknown = dropped;
    if (!dropped) {
      const events = deliveries.map(eventOf);
      // Called on the consumer, so a consumer that is a class instance keeps its `this`.
      const run = consumer.handleMany
        ? () => (consumer as Required<OutboxConsumer>).handleMany(events)
        : () => consumer.handle(events[0] as DomainEvent);
      try {
        await withinLease(run, consumer.retry.leaseSeconds * 1000);
      } catch (err) {
        failure = err ?? new Error('the handler failed');
      }
    }
    // After stop() gave up waiting the database may be closing: the lease hands the delivery on.
    if (this.state === 'stopped') return;
    await Promise.all(deliveries.map((delivery) => this.writeOutcome(consumer, delivery, failure)));
  }

  /** Done, retried later or, after its last attempt, dropped with an error log; never rejects. */
  private async writeOutcome(
    consumer: OutboxConsumer,
    delivery: ClaimedDelivery,
    failure: unknown,
  ): Promise<void> {
    const { leaseSeconds, maxAttempts } = consumer.retry;
    const about = {
      event_id: delivery.event_id,
      type: delivery.type,
      consumer: delivery.consumer,
      attempts: delivery.attempts,
    };
    try {
      if (failure === undefined)
        await this.finish({ event_id: delivery.event_id, consumer: delivery.consumer, attempts: null });
      else if (delivery.attempts >= maxAttempts) {
        this.deps.log.error({ ...about, err: failure }, 'outbox: delivery dropped after its last attempt');
        await this.finish(delivery);
      } else {
        const delayMs = Math.min(
          leaseSeconds * 1000,
          this.options.backoffBaseMs * 2 ** (delivery.attempts - 1),
        );
        this.deps.log.warn(
          { ...about, err: failure, retry_in_ms: delayMs },
          'outbox: delivery failed; retrying',
        );
        await retryLater(this.deps.data, delivery, delayMs);
        // Started after the write, so the retry is due by the database's clock when it fires.
        this.retryWakes.after(delayMs);
      }
    } catch (err) {
      this.deps.log.warn({ ...about, err }, 'outbox: could not write a delivery outcome; its lease lapses');
    }
  }

  private prune(): void {
    if (this.pruning || this.state !== 'running') return;
    this.pruning = pruneOutbox(this.deps.data, this.deps.log, this.options.abandonAfterSeconds).finally(
      () => {
        this.pruning = undefined;
      },
    );
  }
}
