import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';

/**
 * A client process of the realtime benchmark (bench/realtime/socket-holders.ts), started as
 * `node --import tsx bench/socket-holder.ts` with an IPC channel. It opens one WebSocket per token
 * it is given, authenticates each with `{t: 'auth', id: 1, d: {token}}`, reports when all are
 * acknowledged, holds them idle (ws answers the server's pings by itself) until told to close,
 * then closes them and exits. Spreading connections over several of these keeps each client
 * process well inside its file-descriptor limit and off the parent's event loop.
 *
 * Parent -> holder: {type: 'open', url, tokens, concurrency, progressEvery} | {type: 'close'}
 * Holder -> parent: {type: 'progress', authed} (a delta) | {type: 'ready', ...} | {type: 'closed', ...}
 */

export interface OpenCommand {
  type: 'open';
  url: string;
  tokens: string[];
  /** Connections being opened or authenticated at once by this process. */
  concurrency: number;
  /** Report progress every this many authenticated connections. */
  progressEvery: number;
}

export interface CloseCommand {
  type: 'close';
}

export type HolderCommand = OpenCommand | CloseCommand;

export interface ReadyReport {
  type: 'ready';
  authed: number;
  failed: number;
  /** Failures by reason (after retries). */
  failures: Record<string, number>;
  /** Connection attempts that failed and were retried. */
  retries: number;
  ms: number;
}

export interface ClosedReport {
  type: 'closed';
  /** Authenticated connections that closed before the parent asked (closing code -> count). */
  dropped: Record<string, number>;
}

export type HolderReport = { type: 'progress'; authed: number } | ReadyReport | ClosedReport;

const CONNECT_ATTEMPTS = 3;
const HANDSHAKE_TIMEOUT_MS = 30_000;
const AUTH_ACK_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 30_000;

/** The server answered the auth frame with an error frame: retrying would not help. */
class Refused extends Error {}

const sockets: WebSocket[] = [];
const dropped: Record<string, number> = {};
let holding = false;

function report(message: HolderReport): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

/** Opens one socket and resolves once its auth frame was acknowledged. */
function connectOnce(url: string, token: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.terminate();
      reject(error);
    };
    const timer = setTimeout(() => fail(new Error('auth ack timeout')), AUTH_ACK_TIMEOUT_MS);
    const onMessage = (data: Buffer) => {
      const frame = decode(data) as { t?: string; id?: number; code?: string };
      if (frame.id !== 1) return;
      if (frame.t !== 'ack') return fail(new Refused(`auth refused: ${frame.code ?? frame.t}`));
      settled = true;
      clearTimeout(timer);
      ws.off('message', onMessage);
      resolve(ws);
    };
    ws.on('message', onMessage);
    ws.once('open', () => ws.send(encode({ t: 'auth', id: 1, d: { token } })));
    ws.on('error', (error) => fail(error));
    ws.on('close', (code) => {
      if (!settled) fail(new Error(`closed with ${code} before the auth ack`));
      else if (holding) dropped[code] = (dropped[code] ?? 0) + 1;
    });
  });
}

async function open(command: OpenCommand): Promise<void> {
  const started = performance.now();
  const failures: Record<string, number> = {};
  let failed = 0;
  let retries = 0;
  let sinceReport = 0;
  let next = 0;
  holding = true;
  const worker = async () => {
    for (let index = next++; index < command.tokens.length; index = next++) {
      const token = command.tokens[index] as string;
      for (let attempt = 1; ; attempt++) {
        try {
          sockets.push(await connectOnce(command.url, token));
          if (++sinceReport >= command.progressEvery) {
            void report({ type: 'progress', authed: sinceReport });
            sinceReport = 0;
          }
          break;
        } catch (error) {
          const reason = error instanceof Error ? error.message : String(error);
          if (error instanceof Refused || attempt >= CONNECT_ATTEMPTS) {
            failed++;
            failures[reason] = (failures[reason] ?? 0) + 1;
            break;
          }
          retries++;
          await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, command.concurrency) }, worker));
  if (sinceReport > 0) await report({ type: 'progress', authed: sinceReport });
  await report({
    type: 'ready',
    authed: sockets.length,
    failed,
    failures,
    retries,
    ms: performance.now() - started,
  });
}

async function closeAll(): Promise<void> {
  holding = false;
  const closed = sockets.map(
    (ws) =>
      new Promise<void>((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) return resolve();
        ws.once('close', () => resolve());
        ws.close(1000, 'benchmark done');
      }),
  );
  const timeout = new Promise<void>((resolve) => setTimeout(resolve, CLOSE_TIMEOUT_MS).unref());
  await Promise.race([Promise.all(closed), timeout]);
  for (const ws of sockets) if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
  await report({ type: 'closed', dropped });
  process.exit(0);
}

process.on('message', (command: HolderCommand) => {
  if (command.type === 'open') {
    open(command).catch((error) => {
      console.error('[socket-holder] open failed', error);
      process.exit(1);
    });
  } else if (command.type === 'close') {
    void closeAll();
  }
});
// The parent went away (crashed or was killed): do not linger holding sockets.
process.on('disconnect', () => process.exit(0));
