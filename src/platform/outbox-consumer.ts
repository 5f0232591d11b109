import type { ClaimedDelivery } from './outbox-store.js';

/** What the outbox hands its consumers (src/platform/outbox.ts). */

/** A domain event as its consumers get it: `at` is the recording transaction's time, ISO-8601 UTC. */
export interface DomainEvent<T = unknown> {
  id: string;
  type: string;
  at: string;
  data: T;
}

export interface OutboxConsumer {
  /** Unique in the process and the same on every node with the same config, e.g. `extension:<ext>:<type>:<n>`. */
  name: string;
  type: string;
  /** leaseSeconds: a claimed delivery not finished by then is claimed again (by any node); maxAttempts: then dropped with an error log. */
  retry: { leaseSeconds: number; maxAttempts: number };
  /** Resolves: done. Rejects: failed, retried with backoff. */
  handle(event: DomainEvent): Promise<void>;
  /**
   * The events of one claim at once, instead of `handle` on each (a consumer whose work batches,
   * such as one read and one write for all of them): resolves, all done; rejects, all retried.
   */
  handleMany?(events: DomainEvent[]): Promise<void>;
  /**
   * A SQL condition, checked when an event is recorded (`$2` is its type): while it is false the
   * consumer gets no delivery of the event, and an event no consumer takes is not written. A
   * named fragment of the consumer's own module, e.g. "an endpoint subscribes to this type".
   */
  onlyIf?: string;
}

/** The event of a claimed delivery, as its consumer gets it. */
export function eventOf(delivery: ClaimedDelivery): DomainEvent {
  return {
    id: delivery.event_id,
    type: delivery.type,
    at: new Date(delivery.at).toISOString(),
    data: delivery.data,
  };
}
