import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decode, encode } from '@msgpack/msgpack';
import autocannon from 'autocannon';
import WebSocket from 'ws';
import { startService } from './service.js';

async function coldStart() {
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-'));
  try {
    const fresh = await startService({ DATA_DIR: dataDir });
    await fresh.stop();
    const warm = await startService({ DATA_DIR: dataDir });
    await warm.stop();
    return { freshMs: fresh.readyMs, warmMs: warm.readyMs };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function httpHealthz(port: number, seconds: number) {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/healthz`,
    connections: 50,
    duration: seconds,
  });
  return {
    requestsPerSecond: result.requests.average,
    p99Ms: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

/** Each client keeps `inFlight` pings outstanding, so the figure is throughput, not one round trip. */
async function wsPing(port: number, seconds: number, clients = 20, inFlight = 16) {
  const deadline = Date.now() + seconds * 1000;
  let pongs = 0;
  await Promise.all(
    Array.from(
      { length: clients },
      () =>
        new Promise<void>((resolve, reject) => {
          const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
          let id = 0;
          const ping = () => ws.send(encode({ t: 'ping', id: id++ }));
          ws.on('open', () => {
            for (let i = 0; i < inFlight; i++) ping();
          });
          ws.on('message', (data: Buffer) => {
            if ((decode(data) as { t: string }).t !== 'pong') return;
            pongs++;
            if (Date.now() < deadline) ping();
            else ws.close();
          });
          ws.on('close', () => resolve());
          ws.on('error', reject);
        }),
    ),
  );
  return { pongsPerSecond: pongs / seconds, clients, inFlight };
}

/**
 * Foundation benchmarks: cold start of `npm start`, REST throughput of /healthz and gateway
 * ping round trips. Run through `npm run bench [-- --seconds 10]`. Writes bench/results/foundation.md.
 */
export async function run(seconds: number): Promise<string> {
  const cold = await coldStart();
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-'));
  const service = await startService({ DATA_DIR: dataDir });
  const http = await httpHealthz(service.httpPort, seconds);
  const ws = await wsPing(service.wsPort, seconds);
  await service.stop();
  await rm(dataDir, { recursive: true, force: true });

  const report = `# Foundation benchmark

Run ${new Date().toISOString()} on Node ${process.version}, ${seconds} s per load scenario, service and load
generator on the same machine (embedded database, in-process KV).

| scenario | figure |
|---|---|
| cold start to /healthz 200, empty DATA_DIR (initdb + migrations) | ${cold.freshMs.toFixed(0)} ms |
| start to /healthz 200, existing DATA_DIR | ${cold.warmMs.toFixed(0)} ms |
| GET /healthz, 50 connections | ${http.requestsPerSecond.toFixed(0)} req/s, p99 ${http.p99Ms} ms, ${http.errors} errors |
| gateway ping/pong, ${ws.clients} clients x ${ws.inFlight} in flight | ${ws.pongsPerSecond.toFixed(0)} frames/s |
`;
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/foundation.md', report);
  console.log(report);
  return report;
}
