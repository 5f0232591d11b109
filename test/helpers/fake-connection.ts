import { decode } from '@msgpack/msgpack';
import { Connection, type SocketData } from '../../src/platform/gateway/connection.js';
import type { UwsWebSocket } from '../../src/platform/gateway/uws.js';

/** A gateway Connection over a stand-in socket that records what it was sent and how it closed. */
export interface FakeConnection {
  connection: Connection;
  /** Every frame sent to the socket, decoded. */
  sent: Record<string, unknown>[];
  /** How many times sends were corked into one write. */
  readonly corks: number;
  /** The close code and reason, once closed. */
  readonly closedWith: { code: number; reason: string } | undefined;
}

let opened = 0;

/**
 * For the gateway's parts tested without uWebSockets.js: dispatch, sessions, subscriptions. The
 * client reads the first `framesRead` frames; the bytes of later ones stay buffered, as uWS counts them.
 */
export function fakeConnection(
  maxBufferedBytes = 1024 * 1024,
  framesRead = Number.POSITIVE_INFINITY,
): FakeConnection {
  const sent: Record<string, unknown>[] = [];
  let closedWith: FakeConnection['closedWith'];
  let corks = 0;
  let buffered = 0;
  const socket = {
    send: (bytes: Uint8Array) => {
      sent.push(decode(bytes) as Record<string, unknown>);
      if (sent.length <= framesRead) return 1;
      buffered += bytes.byteLength;
      return 0;
    },
    getBufferedAmount: () => buffered,
    cork: (corked: () => void) => {
      corks++;
      corked();
      return socket;
    },
    end: (code: number, reason: string) => {
      closedWith = { code, reason };
    },
  } as unknown as UwsWebSocket<SocketData>;
  const connection = new Connection('127.0.0.1', socket, maxBufferedBytes, () => {});
  connection.number = ++opened;
  return {
    connection,
    sent,
    get closedWith() {
      return closedWith;
    },
    get corks() {
      return corks;
    },
  };
}
