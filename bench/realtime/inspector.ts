import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { closeSocket } from './ws-client.js';

/**
 * The inspector protocol of the servers under test: forcing a full GC and reading V8's heap use
 * for the idle-memory readings.
 */

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (!address || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/**
 * Environment that lets this benchmark force a full garbage collection in a server: the inspector
 * stays off until SIGUSR1 and then listens on this loopback port only.
 */
export async function inspectorEnv(): Promise<{ port: number; env: Record<string, string> }> {
  const port = await freePort();
  const options = `${process.env.NODE_OPTIONS ?? ''} --inspect-port=127.0.0.1:${port}`.trim();
  return { port, env: { NODE_OPTIONS: options } };
}

/** Sends inspector protocol commands, one after the other, to another node process; returns their results. */
async function inspect(pid: number, inspectorPort: number, methods: string[]): Promise<unknown[]> {
  process.kill(pid, 'SIGUSR1');
  let url: string | undefined;
  for (let attempt = 0; attempt < 100 && !url; attempt++) {
    try {
      const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as {
        webSocketDebuggerUrl?: string;
      }[];
      url = targets[0]?.webSocketDebuggerUrl;
    } catch {
      await sleep(50);
    }
  }
  if (!url) throw new Error(`the inspector of pid ${pid} did not come up on port ${inspectorPort}`);
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise<void>((done, fail) => {
    ws.once('open', () => done());
    ws.once('error', fail);
  });
  try {
    const results: unknown[] = [];
    for (const [index, method] of methods.entries()) {
      results.push(
        await new Promise<unknown>((done) => {
          const onMessage = (data: Buffer) => {
            const reply = JSON.parse(data.toString()) as { id?: number; result?: unknown };
            if (reply.id !== index + 1) return;
            ws.off('message', onMessage);
            done(reply.result);
          };
          ws.on('message', onMessage);
          ws.send(JSON.stringify({ id: index + 1, method }));
        }),
      );
    }
    return results;
  } finally {
    await closeSocket(ws);
  }
}

/** Forces two full garbage collections in a node process; returns its V8 heap use after them, in KiB. */
export async function collectGarbage(pid: number, inspectorPort: number): Promise<number> {
  const results = await inspect(pid, inspectorPort, [
    'HeapProfiler.collectGarbage',
    'HeapProfiler.collectGarbage',
    'Runtime.getHeapUsage',
  ]);
  return ((results[2] as { usedSize: number }).usedSize ?? Number.NaN) / 1024;
}

/** V8's heap committed (total size) in a node process, in KiB. */
export async function heapCommittedKiB(pid: number, inspectorPort: number): Promise<number> {
  const [usage] = await inspect(pid, inspectorPort, ['Runtime.getHeapUsage']);
  return (usage as { totalSize: number }).totalSize / 1024;
}
