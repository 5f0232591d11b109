import { setTimeout as sleep } from 'node:timers/promises';
import type { Message } from '../../protocol/chat.js';
import { authedSocket } from '../realtime/ws-client.js';
import { Frames, type Latency, latency } from '../worlds/harness.js';

/**
 * Measurement 1: SENDERS sockets on instance A send `dm.send` frames at a steady combined rate (RATES),
 * each to its own recipient, whose socket is on instance B; each message is timed from its send to
 * the recipient's `dm.message` frame, matched by message id (the ack's). Bodies carry no numbers:
 * the text filter reads digits as letters and masks some of them.
 */

export const SENDERS = 50;
/** The rates measured: the 1,000/s, and one this 2-core machine sustains, for the path's own latency. */
export const RATES = [1000, 250] as const;
/**
 * Sent at the rate before the measured messages and left out of the figure: the first half second
 * at 1,000/s ran before the hot path was compiled and the pool had grown (every message of it over
 * 15 ms, none after), which is start-up, not the steady latency the target is about.
 */
export const WARM_UP_SECONDS = 2;
export const BODY = 'Are you coming to the plaza tonight? Bring the new hat.';

export interface User {
  id: string;
  token: string;
}

export interface DmLatencyResults {
  /** Messages per second, all senders together. */
  rate: number;
  latency: Latency;
  /** From the send to its ack on the sender's socket. */
  ack: Latency;
  expected: number;
  delivered: number;
  duplicates: number;
  /** Refused sends by error code. */
  sendErrors: Record<string, number>;
}

/** `users`: SENDERS senders, then their SENDERS recipients. */
export async function measureDmLatency(
  senderUrl: string,
  recipientUrl: string,
  users: readonly User[],
  seconds: number,
  rate: number,
): Promise<DmLatencyResults> {
  const total = rate * seconds;
  /** By message id: when it was sent (known once acked), when it reached the recipient. */
  const sentAt = new Map<string, number>();
  const arrivedAt = new Map<string, number>();
  let duplicates = 0;
  const sockets: Frames[] = [];
  try {
    const senders: Frames[] = [];
    for (let i = 0; i < SENDERS; i++) {
      const inbox = new Frames(await authedSocket(recipientUrl, (users[SENDERS + i] as User).token));
      inbox.onEvent = (frame, at) => {
        if (frame.t !== 'dm.message') return;
        const { id } = frame.d as Message;
        if (arrivedAt.has(id)) duplicates++;
        else arrivedAt.set(id, at);
      };
      senders.push(new Frames(await authedSocket(senderUrl, (users[i] as User).token)));
      sockets.push(inbox, senders[i] as Frames);
    }
    const send = (i: number) =>
      (senders[i] as Frames).request<Message>('dm.send', {
        user_id: (users[SENDERS + i] as User).id,
        body: BODY,
      });
    // The first message of a pair creates its conversation: not part of the figure.
    await Promise.all(senders.map((_, i) => send(i)));
    await sleep(500);
    const acks: Promise<unknown>[] = [];
    const ackMs: number[] = [];
    const sendErrors: Record<string, number> = {};
    const start = performance.now();
    const warmUp = rate * WARM_UP_SECONDS;
    for (let k = 0; k < warmUp + total; k++) {
      const wait = start + (k * 1000) / rate - performance.now();
      if (wait > 0) await sleep(wait);
      const sent = performance.now();
      const measured = k >= warmUp;
      acks.push(
        send(k % SENDERS).then(
          (message) => {
            if (!measured) return;
            ackMs.push(performance.now() - sent);
            sentAt.set(message.id, sent);
          },
          (error: Error) => {
            const code = error.message.split(':')[0] as string;
            sendErrors[code] = (sendErrors[code] ?? 0) + 1;
          },
        ),
      );
    }
    await Promise.all(acks);
    const delivered = () => [...sentAt.keys()].filter((id) => arrivedAt.has(id));
    for (let waited = 0; delivered().length < sentAt.size && waited < 5000; waited += 50) await sleep(50);
    const ids = delivered();
    return {
      rate,
      latency: latency(ids.map((id) => (arrivedAt.get(id) as number) - (sentAt.get(id) as number))),
      ack: latency(ackMs),
      expected: total,
      delivered: ids.length,
      duplicates,
      sendErrors,
    };
  } finally {
    await Promise.all(sockets.map((s) => s.close()));
  }
}
