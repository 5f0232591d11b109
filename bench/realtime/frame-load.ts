import { setTimeout as sleep } from 'node:timers/promises';
import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';
import { cpuWindow } from './process-stats.js';
import type { Contender, WindowFigures } from './rounds.js';
import { authedSocket, closeSocket } from './ws-client.js';

/** presence.heartbeat frames/s through a gateway (or the bare echo), from sockets in this process. */

export const LOAD_CONNECTIONS = 50;
export const IN_FLIGHT = 16;
/** Frames still unanswered this long after a window ended are counted as errors. */
const DRAIN_TIMEOUT_MS = 10_000;

export interface FrameWindow extends WindowFigures {
  /** Sockets that were open and loaded in this window. */
  connections: number;
  /** Milliseconds from sending a frame to its ack, over the acks counted in the window. */
  p50Ms: number;
  p99Ms: number;
  /**
   * Error frames by code, sockets closed by the server and frames left unanswered, since the
   * previous window ended.
   */
  errors: Record<string, number>;
}

export interface FrameClients extends Contender<FrameWindow> {
  close(): Promise<void>;
}

/** What each socket sends: `frame` builds the frame with its id, `inFlight` are kept outstanding. */
export interface FrameLoad {
  frame(id: number, socketIndex: number): Record<string, unknown>;
  inFlight: number;
}

export const HEARTBEATS: FrameLoad = {
  frame: (id) => ({ t: 'presence.heartbeat', id }),
  inFlight: IN_FLIGHT,
};

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] as number);
}

/**
 * One authenticated socket per token, kept open across windows so a window measures frames, not
 * connecting. In a window each socket keeps `load.inFlight` frames with ids outstanding, and acks
 * arriving within it are counted; afterwards the outstanding frames drain, so the server is idle
 * before the next server's window.
 */
export async function frameClients(
  name: string,
  url: string,
  tokens: string[],
  serverPid: number,
  load: FrameLoad = HEARTBEATS,
): Promise<FrameClients> {
  const sockets = await Promise.all(tokens.map((token) => authedSocket(url, token)));
  let errors: Record<string, number> = {};
  const count = (code: string) => {
    errors[code] = (errors[code] ?? 0) + 1;
  };
  let sending = false;
  let counting = false;
  let acks = 0;
  let latencies: number[] = [];
  let outstanding = 0;
  let onDrained = () => {};
  let closing = false;
  const pumps = sockets.map((ws, socketIndex) => {
    let nextId = 2; // 1 was the auth frame.
    const sentAt = new Map<number, number>();
    const send = () => {
      outstanding++;
      const id = nextId++;
      sentAt.set(id, performance.now());
      ws.send(encode(load.frame(id, socketIndex)));
    };
    ws.on('message', (data: Buffer) => {
      const frame = decode(data) as { t?: string; id?: number; code?: string };
      if (frame.id === undefined) return;
      outstanding--;
      const sent = sentAt.get(frame.id);
      sentAt.delete(frame.id);
      // A ping is answered by a pong, every other frame by an ack.
      if (frame.t === 'ack' || frame.t === 'pong') {
        if (counting) {
          acks++;
          if (sent !== undefined) latencies.push(performance.now() - sent);
        }
      } else count(frame.code ?? String(frame.t));
      if (sending) send();
      else if (outstanding <= 0) onDrained();
    });
    ws.on('close', (code) => {
      if (!closing) count(`socket closed (${code})`);
    });
    // Without a listener an 'error' event would end the whole benchmark; the close that follows is counted.
    ws.on('error', (error) => count(`socket error (${error.message})`));
    return { ws, send };
  });
  return {
    name,
    async window(seconds) {
      const open = pumps.filter(({ ws }) => ws.readyState === WebSocket.OPEN);
      const cpu = await cpuWindow(serverPid);
      acks = 0;
      latencies = [];
      counting = true;
      sending = true;
      const started = performance.now();
      for (const { send } of open) for (let i = 0; i < load.inFlight; i++) send();
      await sleep(seconds * 1000);
      counting = false;
      const elapsed = (performance.now() - started) / 1000;
      const used = await cpu();
      sending = false;
      const drained = new Promise<void>((done) => {
        onDrained = done;
        if (outstanding <= 0) done();
      });
      await Promise.race([drained, sleep(DRAIN_TIMEOUT_MS, undefined, { ref: false })]);
      if (outstanding > 0) {
        errors.unanswered = (errors.unanswered ?? 0) + outstanding;
        outstanding = 0;
      }
      const windowErrors = errors;
      errors = {};
      const sorted = Float64Array.from(latencies).sort();
      return {
        perSecond: acks / elapsed,
        connections: open.length,
        errors: windowErrors,
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
        ...used,
      };
    },
    async close() {
      closing = true;
      await Promise.all(sockets.map(closeSocket));
    },
  };
}
