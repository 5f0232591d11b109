import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';

/** WebSocket clients in the benchmark process itself (the idle sockets are held by bench/socket-holder.ts). */

/** Opens one socket and resolves once its auth frame (id 1) was acknowledged. */
export function authedSocket(url: string, token: string): Promise<WebSocket> {
  return new Promise((done, fail) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const timer = setTimeout(() => {
      ws.terminate();
      fail(new Error(`no auth ack from ${url}`));
    }, 30_000);
    const onMessage = (data: Buffer) => {
      const frame = decode(data) as { t?: string; id?: number; code?: string };
      if (frame.id !== 1) return;
      clearTimeout(timer);
      ws.off('message', onMessage);
      if (frame.t === 'ack') done(ws);
      else {
        ws.terminate();
        fail(new Error(`auth refused by ${url}: ${frame.code ?? frame.t}`));
      }
    };
    ws.on('message', onMessage);
    ws.once('open', () => ws.send(encode({ t: 'auth', id: 1, d: { token } })));
    ws.once('error', (error) => {
      clearTimeout(timer);
      fail(error);
    });
  });
}

export function closeSocket(ws: WebSocket): Promise<void> {
  return new Promise((done) => {
    if (ws.readyState === WebSocket.CLOSED) return done();
    const timer = setTimeout(() => {
      ws.terminate();
      done();
    }, 5_000);
    ws.once('close', () => {
      clearTimeout(timer);
      done();
    });
    ws.close(1000);
  });
}

/** One authenticated connection and one heartbeat, so the idle baseline is a warm process. */
export async function warmUp(url: string, token: string): Promise<void> {
  const ws = await authedSocket(url, token);
  await new Promise<void>((done, fail) => {
    ws.on('message', (data: Buffer) => {
      const frame = decode(data) as { t?: string; id?: number };
      if (frame.id !== 2) return;
      if (frame.t === 'ack') done();
      else fail(new Error(`warm-up heartbeat answered ${JSON.stringify(frame)}`));
    });
    ws.send(encode({ t: 'presence.heartbeat', id: 2 }));
  });
  await closeSocket(ws);
}
