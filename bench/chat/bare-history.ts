import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { toMessage } from '../../src/modules/chat/chat.service.js';
import type { MessageRow } from '../../src/modules/chat/dm.repository.js';
import { historyPageSql } from '../../src/modules/chat/dm-reads.repository.js';
import { pageFrom } from '../../src/platform/cursor.js';
import { openBareDb } from '../datapath/bare-db.js';

/**
 * The second ceiling of the chat benchmark's history pages (4c): Fastify 5 with no logger, hooks or
 * plugins, `GET /page` reading the first page of a random conversation by the page's SELECT (the
 * one pgbench runs, 4b) and answering the JSON GET /api/chat/dm/{user_id}/messages answers. No
 * auth, no read mark, no validation: what is left of the service's work is HTTP, JSON and the
 * driver. Prints `{"port": N}` once listening on 127.0.0.1.
 */
const db = await openBareDb();
const pairs = await db.query<{ a: string; b: string }>(
  'select user_a_id as a, user_b_id as b from conversations',
  [],
);
// The pair's conversation as the service finds it; $2 and $3 are the keyset's, null on a first page.
const PAGE_SQL = historyPageSql(
  '(select id from conversations where user_a_id = $1 and user_b_id = $4)',
  '$5',
);
const PAGE = 50;

const app = Fastify({ logger: false });
app.get('/page', async () => {
  const pair = pairs[Math.floor(Math.random() * pairs.length)] as { a: string; b: string };
  const rows = await db.query<MessageRow>(PAGE_SQL, [pair.a, null, null, pair.b, PAGE + 1]);
  return pageFrom(rows, PAGE, toMessage, (row) => [row.created_key, row.id]);
});

await app.listen({ host: '127.0.0.1', port: 0 });
console.log(JSON.stringify({ port: (app.server.address() as AddressInfo).port }));
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
