import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

export interface RunningService {
  child: ChildProcess;
  httpPort: number;
  wsPort: number;
  /** Milliseconds from spawn until /healthz answered 200. */
  readyMs: number;
  stop(): Promise<void>;
}

/**
 * The node arguments of `npm start` for the sources: package.json's `start` script is
 * `node <flags> scripts/start.mjs <args>`, and the benchmarks run its flags (the service's V8
 * flags change its throughput, so they must be the very ones `npm start` uses) with the sources
 * through tsx, as npm start does without a current build, so that a stale dist/ never decides
 * what is measured. bench/peers runs the compiled build with the same flags.
 */
export async function npmStartArgs(): Promise<string[]> {
  const { scripts } = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: { start: string } };
  const [command, ...words] = scripts.start.trim().split(/\s+/);
  const script = words.indexOf('scripts/start.mjs');
  if (command !== 'node' || script < 0) {
    throw new Error(`npm start is expected to run node scripts/start.mjs, it runs: ${scripts.start}`);
  }
  return [...words.slice(0, script), '--import', 'tsx', 'src/main.ts', ...words.slice(script + 1)];
}

/**
 * npm start's node arguments with the compiled entry point (`npm run build`'s dist/src/main.js)
 * instead of tsx and src/main.ts: what production runs.
 */
export async function compiledStartArgs(): Promise<string[]> {
  const args = (await npmStartArgs()).filter((arg) => arg !== '--import' && arg !== 'tsx');
  return args.map((arg) => (arg === 'src/main.ts' ? COMPILED_ENTRY : arg));
}

/** The compiled service's entry point, relative to a checkout. */
export const COMPILED_ENTRY = 'dist/src/main.js';

/** `npm run build` in a checkout (this one by default), so its COMPILED_ENTRY is its sources'. */
export async function buildService(cwd?: string): Promise<void> {
  await promisify(execFile)('npm', ['run', 'build'], { cwd });
}

/**
 * The node arguments of a benchmark's service: npm start's (the sources through tsx), or with
 * `compiled` the compiled build's, with a V8 CPU profile written into `dir` when given (a
 * benchmark's `--profile DIR`); undefined for npm start's own.
 */
export async function serviceNodeArgs(dir: unknown, compiled = false): Promise<string[] | undefined> {
  if (typeof dir !== 'string' && !compiled) return undefined;
  const profiling = typeof dir === 'string' ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
  return [...profiling, ...(compiled ? await compiledStartArgs() : await npmStartArgs())];
}

/**
 * Prints the service's warnings and errors (a stalled event loop, a 503's reason) as its log lines
 * reach the stdout startService reads.
 */
export function echoWarnings(service: RunningService): void {
  createInterface({ input: service.child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    if (/"level":[456]0/.test(line)) console.error(line);
  });
}

/**
 * Starts the service exactly as `npm start` does (the CLI through tsx, same node flags) unless
 * given other node arguments, in its own process so the load generator never shares its event
 * loop, and waits until /healthz answers. `cwd`: another checkout's service (an earlier commit's).
 * One process unless `env` sets WORKERS: on Postgres and Redis the production default is a worker
 * per core, and a benchmark's figures, its inspector and its process's CPU and RSS are one process's
 * unless it says otherwise (bench/workers.ts and bench/peers say WORKERS).
 */
export async function startService(
  env: Record<string, string>,
  nodeArgs?: readonly string[],
  cwd?: string,
): Promise<RunningService> {
  const started = performance.now();
  const child = spawn(process.execPath, nodeArgs ?? (await npmStartArgs()), {
    cwd,
    env: { ...process.env, WORKERS: '1', HTTP_PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ports = await new Promise<{ httpPort: number; wsPort: number }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`service exited with ${code}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (!line.includes('atrium listening')) return;
      const { httpPort, wsPort } = JSON.parse(line) as { httpPort: number; wsPort: number };
      resolve({ httpPort, wsPort });
    });
  });
  for (;;) {
    const response = await fetch(`http://127.0.0.1:${ports.httpPort}/healthz`).catch(() => undefined);
    if (response?.status === 200) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const readyMs = performance.now() - started;
  return {
    child,
    ...ports,
    readyMs,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
