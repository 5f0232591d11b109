import type * as UwsTypes from 'uWebSockets.js';
import { createRequire } from 'node:module';
import { Decoder, Encoder } from '@msgpack/msgpack';

/**
 * The comparison server of the realtime benchmark: a bare uWebSockets.js WebSocket endpoint on /ws
 * with the gateway's transport settings and no application logic. Every binary frame is decoded as
 * msgpack and answered with `{t: 'ack', id}`, so the same client code that authenticates against
 * the gateway (auth frame, wait for the ack) and drives heartbeats works against it unchanged.
 * GET /healthz answers `ok`, so a probe can time the loop as it does Atrium's. Prints `{"port": N}`
 * on stdout once listening on 127.0.0.1 (port from the first argument, default 0).
 */
const require = createRequire(import.meta.url);
const uws: typeof UwsTypes = require('uWebSockets.js');

const decoder = new Decoder();
const encoder = new Encoder();

const app = uws
  .App()
  .ws('/ws', {
    maxPayloadLength: 256 * 1024,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxBackpressure: 2 * 1024 * 1024,
    message: (ws, message, isBinary) => {
      if (!isBinary) return;
      let id: number | undefined;
      try {
        id = (decoder.decode(new Uint8Array(message)) as { id?: number }).id;
      } catch {
        return;
      }
      ws.send(encoder.encode({ t: 'ack', id }), true);
    },
  })
  .get('/healthz', (res) => {
    res.end('ok');
  });

app.listen('127.0.0.1', Number(process.argv[2] ?? 0), (socket) => {
  if (!socket) {
    console.error('[bare-uws] could not listen');
    process.exit(1);
  }
  console.log(JSON.stringify({ port: uws.us_socket_local_port(socket), native: 'SSLApp' in uws }));
});

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
