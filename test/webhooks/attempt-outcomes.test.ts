import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  claimDue,
  type EndedAttempt,
  insertDeliveries,
  recordAttempts,
} from '../../src/modules/webhooks/deliveries.repository.js';
import { insertEndpoint } from '../../src/modules/webhooks/endpoints.repository.js';
import { transaction } from '../../src/platform/data-access.js';
import { newId } from '../../src/platform/ids.js';
import { createTestDatabase, queryRows, type TestDatabase } from '../helpers/database.js';

/**
 * The outcomes of attempts that ended together are written by one statement
 * (deliveries.repository.ts, recordAttempts; the delivery job batches them): each delivery gets
 * its own, and an attempt a later claim overtook writes nothing.
 */
describe('webhook attempt outcomes written together', () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase();
  });
  afterAll(async () => {
    await testDb?.drop();
  });

  it('writes each ended attempt its own outcome in one statement, and none for an overtaken attempt', async () => {
    const data = testDb.db.data;
    const at = new Date('2026-11-29T12:00:00.000Z');
    const endpointId = newId();
    await transaction(data, (tx) =>
      insertEndpoint(
        tx,
        {
          id: endpointId,
          url: 'https://hooks.example.com/in',
          events: ['*'],
          description: '',
          secret: 'whsec_x',
          at,
        },
        10,
      ),
    );
    const ids = [newId(), newId(), newId(), newId()];
    // One delivery per (endpoint, event): an event each.
    for (const id of ids) {
      await insertDeliveries(data, 'user.registered', [{ id, endpointId, eventId: newId(), body: '{}' }], at);
    }
    const claimed = await claimDue(data, at, new Date(at.getTime() + 60_000), 10);
    expect(claimed.map((delivery) => delivery.id).sort()).toEqual([...ids].sort());
    const byId = new Map(claimed.map((delivery) => [delivery.id, delivery]));
    const ended = (id: string, outcome: Omit<EndedAttempt, 'claimed' | 'at'>): EndedAttempt => ({
      claimed: byId.get(id) as EndedAttempt['claimed'],
      at: new Date(at.getTime() + 1000),
      ...outcome,
    });
    const [delivered, retried, failed, overtaken] = ids as [string, string, string, string];
    const retryAt = new Date(at.getTime() + 5000);
    await recordAttempts(data, [
      ended(delivered, { status: 'delivered', statusCode: 204, error: null, nextAttemptAt: null }),
      ended(retried, { status: 'pending', statusCode: 503, error: 'HTTP 503', nextAttemptAt: retryAt }),
      ended(failed, { status: 'failed', statusCode: null, error: 'connection refused', nextAttemptAt: null }),
      // Claimed again since (its lease lapsed): this attempt's outcome is not the delivery's any more.
      {
        ...ended(overtaken, { status: 'delivered', statusCode: 204, error: null, nextAttemptAt: null }),
        claimed: { id: overtaken, attempts: 0 },
      },
    ]);
    const rows = await queryRows<{
      id: string;
      status: string;
      last_status_code: number | null;
      last_error: string | null;
      next_attempt_at: number | null;
      attempting: boolean;
      delivered_at: number | null;
      finished_at: number | null;
    }>(
      testDb.db,
      `select id, status, last_status_code, last_error, attempting,
         ${['next_attempt_at', 'delivered_at', 'finished_at'].map((c) => `(extract(epoch from ${c}) * 1000)::float8 as ${c}`)}
       from webhook_deliveries where endpoint_id = ?`,
      [endpointId],
    );
    const row = (id: string) => rows.find((r) => r.id === id);
    const endedAt = at.getTime() + 1000;
    expect(row(delivered)).toMatchObject({
      status: 'delivered',
      last_status_code: 204,
      attempting: false,
      delivered_at: endedAt,
      finished_at: endedAt,
    });
    expect(row(retried)).toMatchObject({
      status: 'pending',
      last_status_code: 503,
      last_error: 'HTTP 503',
      next_attempt_at: retryAt.getTime(),
      attempting: false,
      finished_at: null,
    });
    expect(row(failed)).toMatchObject({
      status: 'failed',
      last_status_code: null,
      last_error: 'connection refused',
      attempting: false,
      delivered_at: null,
      finished_at: endedAt,
    });
    expect(row(overtaken)).toMatchObject({ status: 'pending', attempting: true, delivered_at: null });
  });
});
