import { once } from 'node:events';
import { createServer, type Server } from 'node:net';

/**
 * The ports as given, each 0 replaced by a port free on `host` now. The ports picked are held
 * together while they are picked, so they differ, then released for the caller to bind: another
 * process may take one in between, rarely.
 */
export async function concretePorts(host: string, ports: readonly number[]): Promise<number[]> {
  const held: Server[] = [];
  try {
    const picked: number[] = [];
    for (const port of ports) {
      if (port !== 0) {
        picked.push(port);
        continue;
      }
      const server = createServer().listen(0, host);
      held.push(server);
      await once(server, 'listening');
      picked.push((server.address() as { port: number }).port);
    }
    return picked;
  } finally {
    await Promise.all(held.map((server) => new Promise((closed) => server.close(closed))));
  }
}
