import { parseArgs } from 'node:util';

/**
 * `npm run soak [-- options]`: the fault soak's size and rates.
 *   --minutes N            load time (default 10)
 *   --sockets N            users, one socket each, spread over the nodes (default 3000)
 *   --worlds N             public worlds whose chats the users join, one world each (default 20)
 *   --dm-rate N            direct messages per second over sockets (default 20)
 *   --chat-rate N          world chat messages per second over REST (default 5)
 *   --chunk-rate N         chunk writes per second by the world owners over sockets (default 5)
 *   --heartbeat-seconds N  each socket sends a presence heartbeat this often (default 30)
 * Chaos: a random node killed (kill -9) every 30-60 s and started again, Redis restarted at a
 * third of the load time and PostgreSQL at two thirds, each down for DEPENDENCY_DOWN_MS.
 */
export interface SoakOptions {
  minutes: number;
  sockets: number;
  worlds: number;
  dmRate: number;
  chatRate: number;
  chunkRate: number;
  heartbeatSeconds: number;
}

export function soakOptions(): SoakOptions {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string' },
      sockets: { type: 'string' },
      worlds: { type: 'string' },
      'dm-rate': { type: 'string' },
      'chat-rate': { type: 'string' },
      'chunk-rate': { type: 'string' },
      'heartbeat-seconds': { type: 'string' },
    },
    allowPositionals: true,
    strict: false,
  });
  const number = (value: unknown, fallback: number) => {
    const parsed = Number(value);
    return typeof value === 'string' && Number.isFinite(parsed) && parsed > 0 ? parsed : fallback;
  };
  const sockets = Math.floor(number(values.sockets, 3000));
  return {
    minutes: number(values.minutes, 10),
    // Even, so that every user has a peer for direct messages.
    sockets: sockets + (sockets % 2),
    worlds: Math.floor(number(values.worlds, 20)),
    dmRate: number(values['dm-rate'], 20),
    chatRate: number(values['chat-rate'], 5),
    chunkRate: number(values['chunk-rate'], 5),
    heartbeatSeconds: number(values['heartbeat-seconds'], 30),
  };
}
