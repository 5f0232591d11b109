import { mkdir, writeFile } from 'node:fs/promises';
import autocannon from 'autocannon';
import { launchesOf, recordingCommand } from '../test/gameservers/fixtures/launches.js';
import { type Backend, machineLine, scenarioOptions } from './backends.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { startAtrium, stopAtrium } from './realtime/servers.js';
import { BULK_CHUNK_BYTES, BULK_CHUNKS, seedBulkWorld } from './worlds/bulk-load.js';
import { Api, type Latency, latency, progress, WORLDS_ENV } from './worlds/harness.js';
import { withBackend } from './worlds/measure.js';

/**
 * Game servers with the reference server (examples/gameserver/): spawn-to-ready latency over 50
 * spawns, join latency with a ready server, and the internal bulk load of a 1,000-chunk room beside
 * the users' REST load of the same room. Usage: npm run bench -- gameservers [--backends
 * embedded,postgres] [--seconds N] (N: each join window, default 10). Writes bench/results/gameservers.md.
 */
const SPAWNS = 50;
const BULK_REPS = 7;
/** Joins in flight: one alone (the latency of a join), then ten at once (joins of a world take turns). */
const JOIN_CONNECTIONS = [1, 10];

interface JoinLoad {
  connections: number;
  latency: { p50: number; p99: number; max: number };
  perSecond: number;
  errors: number;
}

interface Results {
  spawnToReady: Latency;
  joins: JoinLoad[];
  internalMBps: number[];
  restMBps: number[];
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function measure(backend: Backend, seconds: number): Promise<Results> {
  return withBackend(backend, async (env) => {
    const launches = recordingCommand();
    const atrium = await startAtrium({
      ...env,
      ...WORLDS_ENV,
      GAMESERVER_COMMAND: launches.command,
      GAMESERVER_MAX_PLAYERS: '100000',
      // One user spawns every server of the run, one after another.
      GAMESERVER_SPAWN_RATE_LIMIT_COUNT: '100000',
      GAMESERVER_MAX_LIVE_PER_USER: '10000',
    });
    try {
      const api = new Api(`http://127.0.0.1:${atrium.httpPort}`);
      await api.register(`bench_gs_${backend}`);
      const untilReady = async (serverId: string) => {
        for (;;) {
          const server = await api.ok<{ status: string }>('GET', `/api/servers/${serverId}`);
          if (server.status === 'ready') return;
          if (server.status !== 'starting') throw new Error(`server ${serverId} ${server.status}`);
          await sleep(2);
        }
      };
      progress(`${backend}: ${SPAWNS} spawns, each until ready, then stopped`);
      const { worldId } = await api.world('spawns');
      const samples: number[] = [];
      for (let i = 0; i < SPAWNS; i++) {
        const started = performance.now();
        const { server_id } = await api.ok<{ server_id: string }>('POST', `/api/worlds/${worldId}/servers`);
        await untilReady(server_id);
        samples.push(performance.now() - started);
        await api.ok('DELETE', `/api/servers/${server_id}`);
      }

      const joined = await api.world('joins');
      await api.ok('POST', `/api/worlds/${joined.worldId}/join`);
      const joins: JoinLoad[] = [];
      for (const connections of JOIN_CONNECTIONS) {
        progress(
          `${backend}: joins of a world with a ready server, ${connections} in flight for ${seconds} s`,
        );
        const load = await autocannon({
          url: `${api.base}/api/worlds/${joined.worldId}/join`,
          method: 'POST',
          headers: { authorization: `Bearer ${api.token}` },
          connections,
          duration: seconds,
        });
        joins.push({
          connections,
          latency: { p50: load.latency.p50, p99: load.latency.p99, max: load.latency.max },
          perSecond: load.requests.average,
          errors: load.errors + load.non2xx,
        });
      }

      progress(`${backend}: internal bulk load beside the users' REST load`);
      const bulk = await seedBulkWorld(api);
      const { server_id } = await api.ok<{ server_id: string }>(
        'POST',
        `/api/worlds/${bulk.worldId}/servers`,
      );
      await untilReady(server_id);
      const token = launchesOf(launches.dir, bulk.worldId)[0]?.['server-token'] as string;
      const timedLoad = async (path: string, bearer: string) => {
        const started = performance.now();
        const response = await fetch(`${api.base}${path}`, {
          headers: { authorization: `Bearer ${bearer}` },
        });
        const bytes = (await response.arrayBuffer()).byteLength;
        if (response.status !== 200 || bytes < BULK_CHUNKS * BULK_CHUNK_BYTES)
          throw new Error(`${path}: ${response.status}, ${bytes} bytes`);
        return (BULK_CHUNKS * BULK_CHUNK_BYTES) / ((performance.now() - started) * 1000);
      };
      const internal = () => timedLoad(`/internal/worlds/${bulk.worldId}/rooms/${bulk.roomId}/chunks`, token);
      const rest = () => timedLoad(`/api/worlds/${bulk.worldId}/rooms/${bulk.roomId}/content`, api.token);
      await internal();
      await rest();
      const results: Results = {
        spawnToReady: latency(samples),
        joins,
        internalMBps: [],
        restMBps: [],
      };
      for (let rep = 0; rep < BULK_REPS; rep++) {
        results.internalMBps.push(await internal());
        results.restMBps.push(await rest());
      }
      return results;
    } finally {
      await stopAtrium(atrium);
    }
  });
}

function report(results: Partial<Record<Backend, Results>>, header: string[]): string {
  const range = (values: number[]) => `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
  const rows = Object.entries(results).flatMap(([backend, r]) => {
    if (!r) return [];
    const ratio = (median(r.internalMBps) / median(r.restMBps)) * 100;
    return [
      `| ${backend} | spawn to ready, ${SPAWNS} spawns one after another | **p50 ${r.spawnToReady.p50.toFixed(0)} / p99 ${r.spawnToReady.p99.toFixed(0)} ms** (max ${r.spawnToReady.max.toFixed(0)}) |`,
      ...r.joins.map(
        (j) =>
          `| ${backend} | join with a ready server, ${j.connections} in flight | **p50 ${j.latency.p50} / p99 ${j.latency.p99} ms** (max ${j.latency.max}), ${Math.round(j.perSecond)} joins/s, ${j.errors} errors |`,
      ),
      `| ${backend} | internal bulk load, ${BULK_CHUNKS} chunks of ${BULK_CHUNK_BYTES} bytes | **${median(r.internalMBps).toFixed(1)} MB/s** (${range(r.internalMBps)}), ${ratio.toFixed(1)}% of the users' REST load in the same run |`,
      `| ${backend} | users' REST load of the same room (\`GET …/content\`) | **${median(r.restMBps).toFixed(1)} MB/s** (${range(r.restMBps)}) |`,
    ];
  });
  return [
    '# Game servers',
    '',
    ...header,
    '',
    'Spawn to ready: from `POST /api/worlds/{id}/servers` to the first `GET /api/servers/{id}` that says `ready`, polled every 2 ms, with the reference server (a Node process that loads its world through the internal API, listens, then reports ready); each server is stopped before the next spawn. Join: autocannon `POST /api/worlds/{id}/join` on one world whose server is ready, with 1 and then 10 requests in flight (each join takes a slot; `GAMESERVER_MAX_PLAYERS` set high so no second server starts; joins of one world take turns on its lock, so 10 in flight measure that queue). Bulk load: MB/s are 10^6 payload bytes per second over the whole response, median of 7 interleaved repetitions after one warm-up each, with the server token (`/internal/…/chunks`) and a user token (`/api/…/content`) on the same room.',
    '',
    '| backend | measurement | result |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

export async function run(seconds: number): Promise<string> {
  const { backends } = scenarioOptions();
  const before = codeState();
  const environment = machineLine();
  const started = performance.now();
  const results: Partial<Record<Backend, Results>> = {};
  for (const backend of backends) results[backend] = await measure(backend, seconds);
  const text = report(results, [
    `Written by \`npm run bench -- ${process.argv.slice(2).join(' ')}\` on ${new Date().toISOString().slice(0, 10)} in ${((performance.now() - started) / 60_000).toFixed(1)} min. ${environment}`,
    '',
    codeLine(before, codeState()),
  ]);
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/gameservers.md', text);
  console.log(text);
  return text;
}
