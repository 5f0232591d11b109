import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { notificationsPage, unreadCount } from '../../src/modules/notifications/notifications.repository.js';
import { viewOf } from '../../src/modules/notifications/notifications.service.js';
import { encodeCursor } from '../../src/platform/cursor.js';
import { rootHandle } from '../../src/platform/data-access.js';
import type { PooledConnection } from '../../src/platform/statement-runners.js';
import { openBareDb } from '../datapath/bare-db.js';
import { PAGE } from './seed.js';

/**
 * The ceiling of the inbox reads: Fastify with no logger, hooks, auth or schemas, answering
 * `GET /notifications` (the first page of PAGE, as GET /api/notifications?limit=PAGE) and
 * `GET /unread-count` for BARE_INBOX_USER with the inbox repository's own statements, run through
 * bench/datapath/bare-db.ts (`pg` with named statements on DATABASE_URL, or PGlite in process on
 * BARE_PGLITE_DIR) instead of the service's pool. Prints `{"port": N}` once listening on 127.0.0.1.
 */
const db = await openBareDb();
const connection = {} as PooledConnection;
const data = rootHandle({
  acquire: async () => connection,
  release: async () => {},
  run: (_connection, text, params) => db.query(text, [...params]),
  single: false,
});
const userId = process.env.BARE_INBOX_USER as string;
const app = Fastify({ logger: false });

app.get('/notifications', async () => {
  const rows = await notificationsPage(data, userId, false, undefined, PAGE + 1);
  const page = rows.slice(0, PAGE);
  const last = page.at(-1);
  return {
    items: page.map(viewOf),
    next_cursor: rows.length > PAGE && last ? encodeCursor([last.created_at.toISOString(), last.id]) : null,
  };
});
app.get('/unread-count', async () => ({ count: await unreadCount(data, userId) }));

await app.listen({ host: '127.0.0.1', port: 0 });
console.log(JSON.stringify({ port: (app.server.address() as AddressInfo).port }));
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
