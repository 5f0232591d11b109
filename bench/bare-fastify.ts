import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';

/**
 * The comparison server of the realtime benchmark's REST figure: Fastify 5 with no logger, no
 * hooks and no plugins, `POST /heartbeat` answering a JSON object shaped like the presence
 * heartbeat response. Prints `{"port": N}` on stdout once listening on 127.0.0.1 (port 0).
 */
const app = Fastify({ logger: false });

app.post('/heartbeat', async () => ({
  status: 'online',
  ttl_seconds: 60,
  last_seen_at: new Date().toISOString(),
}));

await app.listen({ host: '127.0.0.1', port: 0 });
console.log(JSON.stringify({ port: (app.server.address() as AddressInfo).port }));

const stop = () => {
  void app.close().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
