import { mkdir, writeFile } from 'node:fs/promises';
import { type Backend, machineLine, scenarioOptions } from './backends.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { startAtrium, stopAtrium } from './realtime/servers.js';
import { Api, progress, WORLDS_ENV } from './worlds/harness.js';
import { withBackend } from './worlds/measure.js';
import {
  measureRollback,
  ROLLBACK_CHUNK_BYTES,
  ROLLBACK_CHUNKS,
  type RollbackResults,
  seedRollbackWorld,
} from './worlds/rollback.js';

/**
 * A world rolled back over 1,000 chunks of 1 MiB: how long it takes, how much the service grows
 * meanwhile, and how long /healthz waits at worst. Usage: npm run bench -- worlds-rollback
 * [--backends embedded,postgres]. Writes bench/results/worlds-rollback.md.
 */
export async function run(): Promise<string> {
  const { backends } = scenarioOptions();
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(environment);
  const results: Partial<Record<Backend, RollbackResults>> = {};
  for (const backend of backends)
    results[backend] = await withBackend(backend, async (env) => {
      // The world holds 1,000 MiB live before the rollback: above the default quota of 256 MiB.
      const serviceEnv = { ...env, ...WORLDS_ENV, MAX_WORLD_CONTENT_BYTES: String(2 ** 32) };
      // Seeding is not measured: its batches get a generous statement timeout on a busy machine.
      let service = await startAtrium({ ...serviceEnv, DATABASE_QUERY_TIMEOUT_MS: '30000' });
      try {
        const api = new Api(`http://127.0.0.1:${service.httpPort}`);
        await api.register('bench_rollback');
        progress(`${backend}: writing ${ROLLBACK_CHUNKS} chunks of 1 MiB and overwriting them...`);
        const seeded = await seedRollbackWorld(api);
        // A fresh process for the rollback: the seeding's own memory (its request bodies) stays out of the figure.
        await stopAtrium(service);
        service = await startAtrium(serviceEnv);
        api.base = `http://127.0.0.1:${service.httpPort}`;
        progress(`${backend}: rolling back (pid ${service.pid})...`);
        const measured = await measureRollback(api, service.pid, seeded);
        progress(`${backend}: ${JSON.stringify(measured)}`);
        return measured;
      } finally {
        await stopAtrium(service);
      }
    });
  const mib = (kib: number) => (kib / 1024).toFixed(0);
  const row = (backend: Backend, r: RollbackResults) =>
    `| ${backend === 'embedded' ? 'embedded (PGlite in the service process)' : 'Postgres + Redis'} | **${r.seconds.toFixed(1)} s** (${r.restored} chunks) | **${mib(r.rssPeakKiB - r.rssBeforeKiB)} MiB** (${mib(r.rssBeforeKiB)} → peak ${mib(r.rssPeakKiB)} MiB) | **${r.healthz.worstMs.toFixed(0)} ms** (${r.healthz.probes} probes) | ${r.mismatches} of ${Math.ceil(ROLLBACK_CHUNKS / 97)} sampled chunks differ; seeding took ${r.seedSeconds.toFixed(0)} s |`;
  const report = [
    '# World content: a rollback of 1,000 chunks of 1 MiB',
    '',
    `Written by \`npm run bench -- ${process.argv.slice(2).join(' ')}\` on ${new Date().toISOString().slice(0, 10)} in ${((performance.now() - started) / 60_000).toFixed(1)} min. ${environment} ${codeLine(before, codeState())}`,
    '',
    `One world, one room: ${ROLLBACK_CHUNKS} chunks of ${ROLLBACK_CHUNK_BYTES.toLocaleString('en-US')} bytes (codec bytes with pseudo-random floats, one byte varied per chunk) written by msgpack batches of 4 (seeding is not measured: it runs with a 30 s statement timeout), then all overwritten with 256-byte chunks; the service is then restarted with the settings below, so the seeding's request bodies are not in its memory, and \`POST /api/worlds/{id}/rollback\` to the revision before the overwrite, which restores all ${ROLLBACK_CHUNKS} (about 1,000 MiB copied by the database, docs/worlds.md "Rollback"). The service runs with \`MAX_WORLD_CONTENT_BYTES=4294967296\` (the world holds 1,000 MiB live, and as much again in history once the rollback copied it back) and the defaults otherwise (\`DATABASE_QUERY_TIMEOUT_MS\` 1 s per statement on Postgres). During the rollback the benchmark reads the service's RSS every 50 ms and sends \`GET /healthz\` one after another; the RSS growth is the peak during the rollback minus the RSS just before it (the restarted process, idle). Afterwards every 97th chunk is read back and compared with what was written. The machine is shared (2 cores), so durations are noisy.`,
    '',
    '| backend | rollback | RSS growth during it | worst `/healthz` during it | check |',
    '|---|---|---|---|---|',
    ...(Object.entries(results) as [Backend, RollbackResults][]).map(([backend, r]) => row(backend, r)),
    '',
  ].join('\n');
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/worlds-rollback.md', report);
  console.log(report);
  return report;
}
