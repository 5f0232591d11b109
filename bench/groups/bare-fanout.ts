import type * as UwsTypes from 'uWebSockets.js';
import { createRequire } from 'node:module';
import { Decoder, Encoder } from '@msgpack/msgpack';
import { Redis } from 'ioredis';
import { groupMemberSql } from '../../src/modules/groups/groups.repository.js';
import { newId } from '../../src/platform/ids.js';
import { openBareDb } from '../datapath/bare-db.js';

/**
 * The ceiling of the group chat latency: bare uWebSockets.js on /ws, run twice on the same
 * Postgres (DATABASE_URL, BARE_POOL_SIZE connections) and Redis (REDIS_URL) as the two service
 * instances are. `auth` takes the token's user id without checking it; `chat.join` subscribes the
 * socket to the group's uWS topic; `chat.sendToGroup` runs the statement that stores a group's
 * chat message (src/modules/chat/channel-chat.repository.ts with groups' access SQL, copied with
 * the membership check and without the reason of a refusal, which a member's send never has), publishes
 * the message on the group's Redis channel and acks it; each server hands its channels' messages
 * to uWS's native topic publish. No validation, text filter, rate limit or recorded history.
 * Prints `{"port": N}` once listening on 127.0.0.1.
 */
const require = createRequire(import.meta.url);
const uws: typeof UwsTypes = require('uWebSockets.js');
const decoder = new Decoder();
const encoder = new Encoder();
const db = await openBareDb();
const publisher = new Redis(process.env.REDIS_URL as string);
const subscriber = new Redis(process.env.REDIS_URL as string);
const CHANNEL = 'bench:groups:fanout:';
const INSERT = `insert into messages (id, group_id, sender_id, body, filtered, created_at)
  select $1, $2, $3, $4, false, now() where ${groupMemberSql('$2::uuid', '$3::uuid')}
  returning id, group_id, sender_id, body, filtered, created_at`;

interface Frame {
  t: string;
  id: number;
  d: { token?: string; group_id?: string; body?: string };
}

const app = uws.App();
await subscriber.psubscribe(`${CHANNEL}*`);
subscriber.on('pmessageBuffer', (_pattern: Buffer, channel: Buffer, bytes: Buffer) => {
  app.publish(channel.toString().slice(CHANNEL.length), bytes, true);
});

app
  .ws<{ userId: string; closed?: boolean }>('/ws', {
    maxPayloadLength: 256 * 1024,
    idleTimeout: 120,
    maxBackpressure: 2 * 1024 * 1024,
    message: (ws, message) => {
      const frame = decoder.decode(new Uint8Array(message)) as Frame;
      const ack = (d?: unknown) => {
        if (!ws.getUserData().closed) ws.send(encoder.encode({ t: 'ack', id: frame.id, d }), true);
      };
      const groupId = frame.d.group_id as string;
      if (frame.t === 'auth') {
        const [, payload = ''] = (frame.d.token ?? '').split('.');
        ws.getUserData().userId = JSON.parse(Buffer.from(payload, 'base64url').toString()).sub;
        ack();
      } else if (frame.t === 'chat.join') {
        ws.subscribe(groupId);
        ack({ group_id: groupId });
      } else {
        db.query<{ created_at: Date }>(INSERT, [
          newId(),
          groupId,
          ws.getUserData().userId,
          frame.d.body,
        ]).then(
          async ([row]) => {
            const d = { ...row, created_at: row?.created_at.toISOString() };
            await publisher.publish(
              `${CHANNEL}${groupId}`,
              Buffer.from(encoder.encode({ t: 'chat.message', d })),
            );
            ack(d);
          },
          (error) => console.error(error),
        );
      }
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
