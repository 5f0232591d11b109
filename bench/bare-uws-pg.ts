import type * as UwsTypes from 'uWebSockets.js';
import { createRequire } from 'node:module';
import { Decoder, Encoder } from '@msgpack/msgpack';
import { openBareDb, seededUserIds } from './datapath/bare-db.js';

/**
 * The ceiling of the data-path benchmark's frame figure: bare uWebSockets.js on /ws where each
 * socket stands for one seeded user (in connection order) and every frame after the auth frame
 * runs the UPDATE of a `presence.status` frame through bench/datapath/bare-db.ts before its ack.
 * No validation, no events. Prints `{"port": N}` once listening on 127.0.0.1.
 */
const require = createRequire(import.meta.url);
const uws: typeof UwsTypes = require('uWebSockets.js');
const decoder = new Decoder();
const encoder = new Encoder();
const db = await openBareDb();
const userIds = await seededUserIds(db);
let connections = 0;

interface Frame {
  t?: string;
  id?: number;
  d?: { status_message?: string };
}

uws
  .App()
  .ws<{ userId: string; closed?: boolean }>('/ws', {
    maxPayloadLength: 256 * 1024,
    idleTimeout: 120,
    open: (ws) => {
      ws.getUserData().userId = userIds[connections++ % userIds.length] as string;
    },
    message: (ws, message) => {
      const frame = decoder.decode(new Uint8Array(message)) as Frame;
      const ack = () => {
        if (!ws.getUserData().closed) ws.send(encoder.encode({ t: 'ack', id: frame.id }), true);
      };
      if (frame.t === 'auth') {
        ack();
        return;
      }
      db.query('update users set status_message = $1, updated_at = $2 where id = $3', [
        frame.d?.status_message ?? null,
        new Date(),
        ws.getUserData().userId,
      ]).then(
        () => ack(),
        (error) => console.error(error),
      );
    },
    close: (ws) => {
      ws.getUserData().closed = true;
    },
  })
  .listen('127.0.0.1', 0, (socket) => {
    if (!socket) process.exit(1);
    console.log(JSON.stringify({ port: uws.us_socket_local_port(socket) }));
  });
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
