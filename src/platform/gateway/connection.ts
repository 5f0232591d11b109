import { Encoder } from '@msgpack/msgpack';
import type { UwsWebSocket } from './uws.js';

const encoder = new Encoder({ ignoreUndefined: true });

export interface SocketData {
  connection?: Connection;
}

/**
 * One client's WebSocket as the rest of the service sees it. It survives the uWS socket: after
 * close, sends are dropped instead of touching a freed native handle, which matters because
 * handlers finish asynchronously and may answer after the client left.
 */
export class Connection {
  closed = false;
  /** Authenticated principal, set by the auth frame (see the gateway's auth handler). */
  principal: unknown = undefined;

  constructor(
    readonly id: string,
    readonly remoteAddress: string,
    private readonly socket: UwsWebSocket<SocketData>,
  ) {}

  /** Encodes and sends one frame; returns false when the socket is gone. */
  send(frame: object): boolean {
    if (this.closed) return false;
    this.socket.send(encoder.encode(frame), true);
    return true;
  }

  /** Closes with a WebSocket close code and a short reason (at most 123 bytes by the protocol). */
  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.end(code, reason.slice(0, 120));
  }

  get bufferedBytes(): number {
    return this.closed ? 0 : this.socket.getBufferedAmount();
  }
}
