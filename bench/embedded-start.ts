import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clusterCacheFile } from '../src/platform/embedded-cluster.js';
import { steadyRss } from './realtime/rss-readings.js';
import { buildService, compiledStartArgs, startService } from './service.js';

/**
 * Embedded mode's start (issue 54's targets: at most 5 s from an empty DATA_DIR to /healthz 200,
 * at most 250 MiB at rest): `npm start`'s node flags on the sources, no DATABASE_URL nor
 * REDIS_URL. Each case starts the service, times spawn to /healthz 200, then waits at least
 * 60 s and until RSS stopped moving (V8's memory reducer gives the start's garbage back 20 to 40 s
 * after the last work) and reads the process's RSS and its peak (VmHWM). Cases, in this order:
 * a first start with the cluster cache absent (deleted first, so this start makes it), a first
 * start with it present, and a restart on that last DATA_DIR.
 * Usage: `npm run bench -- embedded-start [--runs N] [--compiled]`; --compiled runs `npm run build`
 * first and starts the compiled build, as `npm start` does after `npm install` (which builds);
 * without it, the sources through tsx, as `npm start` does after an edit. Writes
 * bench/results/embedded-start.md.
 */

const AT_REST_MIN_MS = 60_000;

interface Reading {
  readyMs: number;
  restMiB: number;
  steady: boolean;
  peakMiB: number;
  load: string;
}

async function peakMiB(pid: number): Promise<number> {
  const match = /^VmHWM:\s+(\d+) kB/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) / 1024;
}

async function startOnce(dataDir: string, nodeArgs: string[] | undefined): Promise<Reading> {
  const load = loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
  const service = await startService({ DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' }, nodeArgs);
  try {
    const pid = service.child.pid as number;
    const { kib, steady } = await steadyRss([pid], AT_REST_MIN_MS);
    return {
      readyMs: service.readyMs,
      restMiB: (kib[0] ?? 0) / 1024,
      steady,
      peakMiB: await peakMiB(pid),
      load,
    };
  } finally {
    await service.stop();
  }
}

/**
 * Removes the cluster cache so the next first start makes it (and leaves it for the next case). The
 * cache is node_modules', so another checkout sharing node_modules may make it again meanwhile.
 */
async function removeClusterCache(): Promise<void> {
  await rm(await clusterCacheFile(undefined, 'empty'), { force: true });
  await rm(await clusterCacheFile(undefined, 'migrated'), { force: true });
}

export async function run(): Promise<string> {
  const { values } = parseArgs({
    options: { runs: { type: 'string' }, compiled: { type: 'boolean' } },
    strict: false,
  });
  const runs = Number(values.runs) || 1;
  const compiled = values.compiled === true;
  if (compiled) await buildService();
  const nodeArgs = compiled ? await compiledStartArgs() : undefined;
  const root = await mkdtemp(join(tmpdir(), 'atrium-start-'));
  const rows: string[] = [];
  const row = (name: string, r: Reading) => {
    const line = `| ${name} | ${(r.readyMs / 1000).toFixed(1)} s | ${r.restMiB.toFixed(0)} MiB${r.steady ? '' : ' (still moving)'} | ${r.peakMiB.toFixed(0)} MiB | ${r.load} |`;
    console.log(line);
    rows.push(line);
  };
  try {
    for (let i = 0; i < runs; i++) {
      await removeClusterCache();
      row('first start, cache absent', await startOnce(join(root, `absent-${i}`), nodeArgs));
      const dataDir = join(root, `present-${i}`);
      row('first start, cache present', await startOnce(dataDir, nodeArgs));
      row('restart', await startOnce(dataDir, nodeArgs));
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  const report = `# Embedded mode: start time and memory

Run ${new Date().toISOString()} on Node ${process.version}, \`npm start\`'s node flags on ${compiled ? 'the compiled build (what `npm start` runs after `npm install`)' : 'the sources (tsx)'},
embedded defaults; the service process only (a child process that makes the cluster cache
is not counted). Targets: healthz at most 5 s on a first start, at most 250 MiB at rest.

| case | spawn to /healthz 200 | RSS at rest (>= 60 s, steady) | peak RSS | load average (1, 5, 15 min) |
|---|---|---|---|---|
${rows.join('\n')}
`;
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/embedded-start.md', report);
  console.log(report);
  return report;
}
