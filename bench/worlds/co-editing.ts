import { setTimeout as sleep } from 'node:timers/promises';
import type { ChunksCommitEvent } from '../../protocol/chunks.js';
import { authedSocket } from '../realtime/ws-client.js';
import { type Api, chunkPayload, Frames, type Latency, latency } from './harness.js';

/**
 * Measurement 4: one editor socket sends `chunks.put` frames at a steady rate; 100 subscriber
 * sockets of the room (on the other instance, or the same) time each `chunks.commit` from the
 * moment the put was sent. Every put writes a new chunk (x = its number), so x names the put.
 */

export const SUBSCRIBERS = 100;
export const PUTS_PER_SECOND = 50;
export const COEDIT_BYTES = 1024;

export interface CoEditResults {
  latency: Latency;
  expected: number;
  delivered: number;
  resyncs: number;
  putErrors: number;
  /** From sending a put to its ack on the editor's socket: the commit alone. */
  ack: Latency;
}

export async function measureCoEditing(
  api: Api,
  editorUrl: string,
  subscriberUrl: string,
  seconds: number,
  label: string,
): Promise<CoEditResults> {
  const { worldId, roomId } = await api.world(`co-editing ${label}`);
  const sentAt: number[] = [];
  const samples: number[] = [];
  let resyncs = 0;
  const sockets: Frames[] = [];
  try {
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const frames = new Frames(await authedSocket(subscriberUrl, api.token));
      sockets.push(frames);
      await frames.request('chunks.subscribe', { world_id: worldId, room_id: roomId });
      frames.onEvent = (frame, at) => {
        if (frame.t === 'chunks.resync') resyncs++;
        if (frame.t !== 'chunks.commit') return;
        for (const { x } of (frame.d as ChunksCommitEvent).revisions)
          samples.push(at - (sentAt[x] as number));
      };
    }
    const editor = new Frames(await authedSocket(editorUrl, api.token));
    sockets.push(editor);
    const payload = chunkPayload(COEDIT_BYTES);
    const puts = PUTS_PER_SECOND * seconds;
    const acks: Promise<unknown>[] = [];
    const ackMs: number[] = [];
    let putErrors = 0;
    const start = performance.now();
    for (let x = 0; x < puts; x++) {
      const wait = start + (x * 1000) / PUTS_PER_SECOND - performance.now();
      if (wait > 0) await sleep(wait);
      const sent = performance.now();
      sentAt[x] = sent;
      const d = { world_id: worldId, room_id: roomId, x, y: 0, z: 0, payload, expected_revision: null };
      acks.push(
        editor.request('chunks.put', d).then(
          () => ackMs.push(performance.now() - sent),
          () => putErrors++,
        ),
      );
    }
    await Promise.all(acks);
    const expected = puts * SUBSCRIBERS;
    for (let waited = 0; samples.length < expected && waited < 5000; waited += 50) await sleep(50);
    const delivered = samples.length;
    return { latency: latency(samples), expected, delivered, resyncs, putErrors, ack: latency(ackMs) };
  } finally {
    await Promise.all(sockets.map((s) => s.close()));
  }
}
