import { createConnection } from 'node:net';
import { type ControlReply, type ControlRequest, controlSocketPath, errnoOf } from './control-channel.js';

/**
 * The CLI's side of the control channel (control-channel.ts): sends one request to the server on
 * DATA_DIR's socket and waits for its answer.
 * Undefined when no server listens there (no socket file, a stale one, no channel on this
 * platform): the caller then does the work itself.
 */
export function callControl(
  dataDir: string,
  request: ControlRequest,
  timeoutMs = 330_000,
): Promise<ControlReply | undefined> {
  const path = controlSocketPath(dataDir);
  if (!path) return Promise.resolve(undefined);
  return new Promise((done, fail) => {
    const socket = createConnection({ path });
    let connected = false;
    const chunks: Buffer[] = [];
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      fail(new Error(`The server's control channel (${path}) did not answer within ${timeoutMs} ms.`));
    });
    socket.once('connect', () => {
      connected = true;
      socket.write(`${JSON.stringify(request)}\n`);
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (chunk.indexOf(10) === -1) return;
      const text = Buffer.concat(chunks).toString('utf8');
      socket.end();
      try {
        done(JSON.parse(text.slice(0, text.indexOf('\n'))) as ControlReply);
      } catch {
        fail(new Error(`The server's control channel (${path}) sent an answer that is not JSON.`));
      }
    });
    socket.once('error', (error) => {
      if (!connected && ['ENOENT', 'ECONNREFUSED'].includes(errnoOf(error) ?? '')) done(undefined);
      else fail(new Error(`The server's control channel (${path}) failed: ${error.message}`));
    });
    socket.once('close', () =>
      fail(new Error(`The server's control channel (${path}) closed without an answer.`)),
    );
  });
}
