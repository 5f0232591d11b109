import type * as UwsTypes from 'uWebSockets.js';
import { createRequire } from 'node:module';

/**
 * The only place uWebSockets.js is loaded. The npm alias ships native builds for Node 20 (ABI 115);
 * on other Node versions it falls back to a much slower pure-JS shim, which we detect here so
 * /healthz and the startup log can say so.
 */
const require = createRequire(import.meta.url);
export const uws: typeof UwsTypes = require('uWebSockets.js');

/** The native addon exposes SSLApp; the JS fallback does not. */
export const uwsNative = typeof (uws as { SSLApp?: unknown }).SSLApp === 'function';

export type UwsWebSocket<T> = UwsTypes.WebSocket<T>;
export type UwsBehavior<T> = UwsTypes.WebSocketBehavior<T>;

/**
 * Per-socket state. The native build keeps it in the socket's user data; the JS fallback does
 * not implement user data, so there a WeakMap keyed by the socket object stands in.
 */
const fallbackData = new WeakMap<object, unknown>();

export function attachConnection<T>(ws: UwsWebSocket<{ connection?: T }>, connection: T): void {
  if (uwsNative) ws.getUserData().connection = connection;
  else fallbackData.set(ws, connection);
}

export function connectionOf<T>(ws: UwsWebSocket<{ connection?: T }>): T | undefined {
  return uwsNative ? ws.getUserData().connection : (fallbackData.get(ws) as T | undefined);
}

/** The peer address as text; the fallback cannot tell it, which must not cost the connection. */
export function remoteAddressOf(ws: UwsWebSocket<unknown>): string {
  try {
    return Buffer.from(ws.getRemoteAddressAsText()).toString();
  } catch {
    return 'unknown';
  }
}
export type UwsListenSocket = UwsTypes.us_listen_socket;
