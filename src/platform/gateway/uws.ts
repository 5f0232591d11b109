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

/** uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT (the typings' ListenOptions): bind without SO_REUSEPORT. */
const EXCLUSIVE_PORT = 1;

/**
 * Listens on host:port, `exclusive` or sharing the port with the other processes that listen on
 * it (SO_REUSEPORT: worker mode's workers share WS_PORT). uSockets sets SO_REUSEADDR only for a
 * port other than 0. The typings declare no overload taking a host and options together, which
 * the native addon and the JS fallback both take (the fallback ignores the options).
 */
export function listenOn(
  app: UwsTypes.TemplatedApp,
  at: { host: string; port: number; exclusive: boolean },
  listening: (socket: UwsListenSocket | false) => void,
): void {
  const listen = app.listen as (...args: unknown[]) => UwsTypes.TemplatedApp;
  listen.call(app, at.host, at.port, at.exclusive ? EXCLUSIVE_PORT : 0, listening);
}
