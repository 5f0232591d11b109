import { startDevServer } from './dev-server.js';

/**
 * `npx tsx examples/web-client/serve.ts`: serves the example page for an Atrium already running
 * (`npm start`). ATRIUM_HTTP_URL and ATRIUM_WS_URL say where it runs, PORT where the page is.
 */

const server = await startDevServer({
  atriumHttpUrl: process.env.ATRIUM_HTTP_URL ?? 'http://127.0.0.1:8080',
  atriumWsUrl: process.env.ATRIUM_WS_URL ?? 'ws://127.0.0.1:8081/ws',
  port: Number(process.env.PORT ?? 5173),
});
console.log(`Atrium web client example: open ${server.url}`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void server.close().then(() => process.exit(0));
  });
}
