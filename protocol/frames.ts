import { z } from 'zod';

/**
 * The frame envelope. Every frame is one binary WebSocket message holding a msgpack map:
 *   client -> server: { t: <type>, id?: <request id>, d?: <payload> }
 *   server -> client: { t: 'ack' | 'error' | 'pong' | <event type>, id?: <request id>, ... }
 * `id` is chosen by the client (an unsigned 32-bit integer) and echoed on the ack or error that
 * answers the frame, so a client can match replies to requests.
 */
export const REQUEST_ID_MAX = 2 ** 32 - 1;

export const clientFrameSchema = z.object({
  t: z.string().min(1).max(64),
  id: z.number().int().min(0).max(REQUEST_ID_MAX).optional(),
  d: z.unknown().optional(),
});
export type ClientFrame = z.infer<typeof clientFrameSchema>;

/** Client frame types. */
export const ClientFrameType = {
  PING: 'ping',
} as const;

/** Server frame types. */
export const ServerFrameType = {
  PONG: 'pong',
  ACK: 'ack',
  ERROR: 'error',
} as const;

export interface PongFrame {
  t: 'pong';
  id?: number;
  /** Server time in milliseconds since the epoch, for clock-offset estimates. */
  ts: number;
}

export interface AckFrame {
  t: 'ack';
  id: number;
  d?: unknown;
}

export interface ErrorFrame {
  t: 'error';
  /** The request id of the frame this answers, when it had one. */
  id?: number;
  code: string;
  message: string;
  errors?: { path: string; message: string }[];
  retry_after?: number;
}

/** WebSocket close codes the gateway uses. */
export const CloseCode = {
  /** The server is shutting down; reconnect to another node or later. */
  GOING_AWAY: 1001,
} as const;
