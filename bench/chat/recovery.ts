import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';
import type { Message } from '../../protocol/chat.js';
import type { StreamPosition } from '../../protocol/stream-position.js';
import { progress } from '../realtime/progress.js';
import { closeSocket } from '../realtime/ws-client.js';
import { Api, type Frame } from '../worlds/harness.js';
import { BODY, type User } from './latency.js';

/**
 * Measurement 3: the reader's socket closes at a known position; MISSED direct messages are sent
 * to them over REST; a new socket authenticates with `recover` at that position, timed from the
 * auth frame to its ack. The events before the ack must be the MISSED messages, offsets rising.
 */

export const MISSED = 1000;
export const REPETITIONS = 5;
const SENDS_IN_FLIGHT = 8;

export interface RecoveryResults {
  /** Auth frame to ack, per repetition. */
  ms: number[];
  problems: string[];
}

type EventFrame = Frame & { pos?: StreamPosition };
type AuthAck = { position?: StreamPosition; recovered?: boolean };

/** Opens a socket and authenticates it (recovering from `recover` if given). */
function authenticate(url: string, token: string, recover?: StreamPosition) {
  return new Promise<{ ws: WebSocket; ms: number; ack: EventFrame; events: EventFrame[] }>((done, fail) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const events: EventFrame[] = [];
    let sent = 0;
    const timer = setTimeout(() => {
      ws.terminate();
      fail(new Error(`no auth ack from ${url}`));
    }, 60_000);
    ws.once('open', () => {
      sent = performance.now();
      ws.send(encode({ t: 'auth', id: 1, d: { token, ...(recover ? { recover } : {}) } }));
    });
    ws.on('message', (data: Buffer) => {
      const frame = decode(data) as EventFrame;
      if (frame.id !== 1) return void events.push(frame);
      const ms = performance.now() - sent;
      ws.removeAllListeners('message');
      clearTimeout(timer);
      done({ ws, ms, ack: frame, events });
    });
    ws.once('error', (error) => {
      clearTimeout(timer);
      fail(error);
    });
  });
}

export async function measureRecovery(
  httpUrl: string,
  wsUrl: string,
  reader: User,
  sender: User,
  label: string,
): Promise<RecoveryResults> {
  const api = new Api(httpUrl);
  api.token = sender.token;
  const ms: number[] = [];
  const problems: string[] = [];
  let { ws, ack } = await authenticate(wsUrl, reader.token);
  try {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const from = (ack.d as AuthAck).position;
      if (!from) throw new Error(`auth ack without a position: ${JSON.stringify(ack)}`);
      await closeSocket(ws);
      const sent = new Set<string>();
      let started = 0;
      const sendAll = async () => {
        while (started++ < MISSED)
          sent.add((await api.ok<Message>('POST', `/api/chat/dm/${reader.id}/messages`, { body: BODY })).id);
      };
      await Promise.all(Array.from({ length: SENDS_IN_FLIGHT }, sendAll));
      const recovery = await authenticate(wsUrl, reader.token, from);
      ({ ws, ack } = recovery);
      ms.push(recovery.ms);
      const d = (ack.d ?? {}) as AuthAck;
      const dms = recovery.events.filter((e) => e.t === 'dm.message');
      const offsets = dms.map((e) => e.pos?.offset ?? Number.NaN);
      const ids = new Set(dms.map((e) => (e.d as Message).id));
      const fault = [
        ack.t !== 'ack' && `answered ${ack.t} ${ack.code}`,
        d.recovered !== true && `recovered: ${d.recovered}`,
        recovery.events.length !== dms.length && `${recovery.events.length - dms.length} other frames`,
        dms.length !== MISSED && `${dms.length} dm.message frames, not ${MISSED}`,
        (ids.size !== dms.length || [...sent].some((id) => !ids.has(id))) &&
          'not the messages sent, each once',
        !offsets.every((o, i) => o > (i ? (offsets[i - 1] as number) : from.offset)) &&
          'offsets out of order',
        dms.some((e) => e.pos?.epoch !== from.epoch) && 'another epoch',
        d.position?.offset !== offsets.at(-1) && `ack position ${d.position?.offset}, last ${offsets.at(-1)}`,
      ].filter(Boolean);
      progress(
        `${label}: recovery ${rep + 1}/${REPETITIONS}, ${dms.length} events in ${recovery.ms.toFixed(1)} ms`,
      );
      if (fault.length) problems.push(`${label} repetition ${rep + 1}: ${fault.join(', ')}`);
    }
  } finally {
    await closeSocket(ws);
  }
  return { ms, problems };
}
