import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';

export interface ReceivedFrame {
  t: string;
  id?: number;
  [key: string]: unknown;
}

/**
 * A raw WebSocket test client: sends whatever bytes a test wants (including garbage) and
 * decodes what the gateway answers, so tests exercise the real wire format. A server frame the
 * msgpack decoder refuses is a bug no client could live with: it is kept in `undecodable` and
 * named when `next` gives up (throwing from the socket's event handler instead would take the
 * whole test worker down).
 */
export class TestSocket {
  readonly frames: ReceivedFrame[] = [];
  readonly undecodable: { error: string; hex: string }[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      try {
        this.frames.push(decode(data) as ReceivedFrame);
      } catch (error) {
        this.undecodable.push({ error: String(error), hex: data.toString('hex').slice(0, 400) });
      }
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
  }

  static connect(url: string): Promise<TestSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      const socket = new TestSocket(ws);
      ws.once('open', () => resolve(socket));
      ws.once('error', reject);
    });
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  sendFrame(frame: unknown): void {
    this.ws.send(encode(frame));
  }

  sendRaw(data: Uint8Array | string): void {
    this.ws.send(data);
  }

  /** Resolves with the first received frame (old or new) matching `match`, or rejects after `timeoutMs`. */
  async next(match: (frame: ReceivedFrame) => boolean, timeoutMs = 2000): Promise<ReceivedFrame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // From the start at every wake: another waiter on this socket may have taken a frame since,
      // which shifts the ones after it down; an index kept across wakes would then skip one.
      const index = this.frames.findIndex(match);
      if (index !== -1) return this.frames.splice(index, 1)[0] as ReceivedFrame;
      const left = deadline - Date.now();
      if (left <= 0) {
        const unreadable = this.undecodable.map((f) => `${f.error}: ${f.hex}`).join('; ');
        throw new Error(
          `No matching frame within ${timeoutMs} ms; got ${JSON.stringify(this.frames)}` +
            (unreadable ? `; frames msgpack cannot decode: ${unreadable}` : ''),
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.ws.close();
  }
}

/** Connects and authenticates with an access token; resolves once the auth frame was acknowledged. */
export async function authedSocket(wsUrl: string, accessToken: string): Promise<TestSocket> {
  const socket = await TestSocket.connect(wsUrl);
  socket.sendFrame({ t: 'auth', id: 0, d: { token: accessToken } });
  const reply = await socket.next((f) => f.id === 0 && (f.t === 'ack' || f.t === 'error'));
  if (reply.t !== 'ack') throw new Error(`auth failed: ${JSON.stringify(reply)}`);
  return socket;
}

/** Sends a request frame and resolves with its ack or error frame. */
export async function request(socket: TestSocket, t: string, d?: unknown): Promise<ReceivedFrame> {
  const id = nextRequestId++;
  socket.sendFrame({ t, id, ...(d === undefined ? {} : { d }) });
  return socket.next((f) => f.id === id && (f.t === 'ack' || f.t === 'error'));
}

let nextRequestId = 1000;

/** The sockets a test file opens, so that it can close them all when it ends. */
export function openedSockets(wsUrl: () => string) {
  const sockets: TestSocket[] = [];
  return {
    /** Connects, and authenticates when given an access token. */
    async open(accessToken?: string): Promise<TestSocket> {
      const socket = accessToken
        ? await authedSocket(wsUrl(), accessToken)
        : await TestSocket.connect(wsUrl());
      sockets.push(socket);
      return socket;
    },
    closeAll(): void {
      for (const socket of sockets.splice(0)) socket.close();
    },
  };
}
