import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { openBareDb, seededUserIds } from './datapath/bare-db.js';

/**
 * The ceiling of the data-path benchmark's REST figure: Fastify 5 with no logger, hooks or plugins,
 * `GET /me` running the SELECT of GET /api/users/me for a random seeded user (the benchmark signs
 * atrium's requests as random seeded users too) through bench/datapath/bare-db.ts and answering the
 * same JSON fields. Prints `{"port": N}` once listening on 127.0.0.1.
 */
const db = await openBareDb();
const userIds = await seededUserIds(db);
const app = Fastify({ logger: false });

app.get('/me', async () => {
  const [user] = await db.query<{
    id: string;
    username: string;
    created_at: Date;
    last_seen_at: Date | null;
    status_message: string | null;
    roles: string[];
  }>('select id, username, created_at, last_seen_at, status_message, roles from users where id = $1', [
    userIds[Math.floor(Math.random() * userIds.length)],
  ]);
  if (!user) throw new Error('the seeded user is gone');
  return {
    id: user.id,
    username: user.username,
    created_at: user.created_at.toISOString(),
    last_seen_at: user.last_seen_at?.toISOString() ?? null,
    status_message: user.status_message,
    roles: user.roles,
  };
});

await app.listen({ host: '127.0.0.1', port: 0 });
console.log(JSON.stringify({ port: (app.server.address() as AddressInfo).port }));
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
