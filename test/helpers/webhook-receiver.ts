import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got, its body as the bytes sent (as text). */
export interface ReceivedHook {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * A webhook receiver on 127.0.0.1 that records every request and answers with the status
 * `statusFor(path, n)` gives (n counts that path's requests from 1; a promise holds the answer),
 * 204 by default.
 */
export async function webhookReceiver(
  statusFor: (path: string, n: number) => number | Promise<number> = () => 204,
) {
  const received: ReceivedHook[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? '/';
    received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString() });
    const status = await statusFor(path, received.filter((hook) => hook.path === path).length);
    res.writeHead(status, status >= 300 && status < 400 ? { location: `${path}/moved` } : {});
    res.end(status >= 400 ? `refused with ${status}` : '');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    received,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    /** What `path` got, oldest first. */
    at: (path: string) => received.filter((hook) => hook.path === path),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
