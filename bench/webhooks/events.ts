import { setTimeout as sleep } from 'node:timers/promises';
import { newId } from '../../src/platform/ids.js';
import type { DomainEvent } from '../../src/platform/outbox.js';

/** The event type the bench delivers: `user.deleted`, the catalogue's smallest body (one id). */
export const EVENT_TYPE = 'user.deleted';

/** A `user.deleted` event recorded at `at`, as the outbox hands it to the webhooks' fan-out. */
export const benchEvent = (at: Date): DomainEvent<{ user_id: string }> => ({
  id: newId(),
  type: EVENT_TYPE,
  at: at.toISOString(),
  data: { user_id: newId() },
});

/**
 * Calls `send(i)` `rate` times a second for `seconds`, on schedule whatever the earlier calls are
 * still doing (an open loop: a slow answer delays no later send), and resolves once every call settled.
 */
export async function paced(
  rate: number,
  seconds: number,
  send: (i: number) => Promise<unknown>,
): Promise<void> {
  const started = performance.now();
  const sent: Promise<unknown>[] = [];
  for (let i = 0; i < rate * seconds; i++) {
    const wait = started + (i * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    sent.push(send(i));
  }
  await Promise.all(sent);
}
