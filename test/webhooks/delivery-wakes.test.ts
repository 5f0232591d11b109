import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type DeliveryStatus, insertDeliveries } from '../../src/modules/webhooks/deliveries.repository.js';
import { DeliveryWorker } from '../../src/modules/webhooks/delivery-worker.js';
import { insertEndpoint } from '../../src/modules/webhooks/endpoints.repository.js';
import { newSecret } from '../../src/modules/webhooks/signing.js';
import { transaction } from '../../src/platform/data-access.js';
import { newId } from '../../src/platform/ids.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

/** How far the clock is behind the timers when the retry's wake fires, then ahead once the claim is sent. */
const SKEW_MS = 500;

/**
 * The delivery job's wake for its own retries (delivery-worker.ts): a timer measures time on its
 * own, so it may fire before the job's clock reaches the retry (Node starts a timer from the event
 * loop's time of the turn that set it). With no safety pass for an hour, only that wake runs one.
 */
describe('the webhook delivery job waking for its retries', () => {
  let testDb: TestDatabase;
  let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    receiver = await webhookReceiver((_path, n) => (n === 1 ? 500 : 204));
  });
  afterAll(async () => {
    await receiver?.close();
    await testDb?.drop();
  });

  it('still retries when its wake came before the retry was due by the clock and the claim found nothing', async () => {
    let offsetMs = 0;
    /** Set once the retry's wake is scheduled: the clock lags until the next claim is sent. */
    let lagging = false;
    const outcomes: DeliveryStatus[] = [];
    const worker = new DeliveryWorker({
      data: () => {
        // The claim's time was read before this: it found nothing due. Time passes past the retry
        // while the claim runs.
        if (lagging) {
          lagging = false;
          offsetMs += 2 * SKEW_MS;
        }
        return testDb.db.data;
      },
      log: { warn: () => {} },
      clock: () => new Date(Date.now() + offsetMs),
      settings: {
        timeoutSeconds: 5,
        retryBaseSeconds: 1,
        maxAttempts: 3,
        allowPrivateNetworks: true,
        retentionDays: 7,
      },
      intervalMs: 3_600_000,
      onOutcome: (status) => {
        outcomes.push(status);
        // After the job has set its wake for the retry, in this same turn.
        if (status === 'pending') {
          queueMicrotask(() => {
            offsetMs -= SKEW_MS;
            lagging = true;
          });
        }
      },
    });
    const at = new Date();
    const endpointId = newId();
    const url = receiver.url(`/hooks/${endpointId}`);
    await transaction(testDb.db.data, (tx) =>
      insertEndpoint(
        tx,
        { id: endpointId, url, events: ['*'], description: '', secret: newSecret(), at },
        10,
      ),
    );
    await insertDeliveries(
      testDb.db.data,
      'user.registered',
      [{ id: newId(), endpointId, eventId: newId(), body: '{}' }],
      at,
    );
    worker.start();
    try {
      await vi.waitFor(() => expect(outcomes).toEqual(['pending', 'delivered']), {
        timeout: 15_000,
        interval: 20,
      });
      expect(receiver.at(`/hooks/${endpointId}`)).toHaveLength(2);
    } finally {
      await worker.stop();
    }
  });
});
