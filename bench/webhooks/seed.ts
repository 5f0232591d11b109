import { configFrom } from '../../src/config.js';
import { storeNotifications } from '../../src/modules/notifications/notifications.repository.js';
import { insertDeliveries } from '../../src/modules/webhooks/deliveries.repository.js';
import { insertEndpoint, updateEndpoint } from '../../src/modules/webhooks/endpoints.repository.js';
import { deliveryBody } from '../../src/modules/webhooks/event-bodies.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { migrateUp } from '../../src/platform/migrate.js';
import { benchEvent, EVENT_TYPE } from './events.js';

/**
 * The webhooks bench's database, written by the product's repositories before the service starts:
 * a user with NOTIFICATIONS notifications (all unread: the count's worst case), and two endpoints
 * of the receiver, both disabled, subscribed to EVENT_TYPE with one secret: `backlog`, with
 * `deliveries` pending deliveries due now (one event each, bodies as the fan-out writes them), and
 * `lag`, which the outbox lag's events fan out to. An endpoint's deliveries wait while it is
 * disabled, so the bench starts and stops each load by enabling and disabling its endpoint.
 */

export const NOTIFICATIONS = 1000;
/** The inbox page the bench reads: GET /api/notifications?limit=PAGE. */
export const PAGE = 50;
/** Deliveries one seeding transaction writes. */
const DELIVERIES_PER_TRANSACTION = 1000;

export interface WebhooksSeed {
  inboxUserId: string;
  endpoints: { backlog: string; lag: string };
  deliveries: number;
  seconds: number;
}

export async function seedWebhooks(
  env: Record<string, string>,
  receiver: { url: string; secret: string },
  deliveries: number,
): Promise<WebhooksSeed> {
  const started = performance.now();
  const config = configFrom(env);
  const db = await openDatabase(config);
  try {
    await migrateUp(db, config.DATABASE_URL);
    const at = new Date();
    const inboxUserId = newId();
    await executeBound(
      db.data,
      `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
       values ($1, 'bench_inbox', '!', now(), now())`,
      [inboxUserId],
    );
    await transaction(db.data, (tx) =>
      storeNotifications(
        tx,
        Array.from({ length: NOTIFICATIONS }, (_, i) => ({
          id: newId(),
          userId: inboxUserId,
          code: 'friend_request.received',
          subject: `bench_${i} sent you a friend request`,
          contentJson: JSON.stringify({ user: { id: newId(), username: `bench_${i}` } }),
          senderId: null,
          createdAt: new Date(at.getTime() - (NOTIFICATIONS - i) * 1000),
        })),
        NOTIFICATIONS,
      ),
    );
    const endpoint = (description: string) =>
      transaction(db.data, async (tx) => {
        const id = newId();
        const row = { id, url: receiver.url, events: [EVENT_TYPE], description, secret: receiver.secret, at };
        await insertEndpoint(tx, row, config.WEBHOOK_MAX_ENDPOINTS);
        await updateEndpoint(tx, id, { enabled: false }, at);
        return id;
      });
    const endpoints = { backlog: await endpoint('bench backlog'), lag: await endpoint('bench lag') };
    for (let written = 0; written < deliveries; written += DELIVERIES_PER_TRANSACTION) {
      await transaction(db.data, async (tx) => {
        for (let i = written; i < Math.min(deliveries, written + DELIVERIES_PER_TRANSACTION); i++) {
          const event = benchEvent(at);
          const id = newId();
          const body = deliveryBody(id, EVENT_TYPE, event);
          await insertDeliveries(
            tx,
            event.type,
            [{ id, endpointId: endpoints.backlog, eventId: event.id, body }],
            at,
          );
        }
      });
    }
    await executeBound(db.data, 'analyze', []);
    return { inboxUserId, endpoints, deliveries, seconds: (performance.now() - started) / 1000 };
  } finally {
    await db.close();
  }
}
