import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { COMPILED_ENTRY, type RunningService, startService } from '../service.js';
import { inspectorEnv } from './inspector.js';
import { assertNodeProcess } from './process-stats.js';
import { progress } from './progress.js';

/** Starting and stopping the servers under test: atrium instances and the bare comparison servers. */

/**
 * The frame limit is raised to the most the config accepts (WS_MAX_FRAMES_PER_SECOND allows at most
 * 100000), so throughput runs measure the work, not the limiter. Connections must authenticate
 * within WS_AUTH_TIMEOUT_MS of opening: generous, since 18,000 open in bounded batches.
 */
export const SERVICE_ENV = {
  WS_MAX_FRAMES_PER_SECOND: '100000',
  WS_AUTH_TIMEOUT_MS: '120000',
  LOG_LEVEL: 'info',
};

export function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** SIGTERM, then SIGKILL if the process has not exited after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (exited(child)) return;
  const gone = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => {
    progress(`pid ${child.pid} did not exit within ${graceMs / 1000} s of SIGTERM; sending SIGKILL`);
    child.kill('SIGKILL');
  }, graceMs);
  await gone;
  clearTimeout(timer);
}

export interface BareServer {
  pid: number;
  port: number;
  /** Everything the server printed on its `{"port": N}` line. */
  announced: Record<string, unknown>;
  inspectorPort: number;
  stop(): Promise<void>;
}

/** Starts one of the bare comparison servers and waits for the `{"port": N}` line it prints. */
export async function startBareServer(script: string, env: Record<string, string> = {}): Promise<BareServer> {
  const inspector = await inspectorEnv();
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, ...inspector.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const announced = await new Promise<Record<string, unknown>>((done, fail) => {
      child.once('exit', (code) => fail(new Error(`${script} exited with ${code}`)));
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        try {
          const parsed = JSON.parse(line) as { port?: unknown };
          if (typeof parsed.port === 'number') done(parsed);
        } catch {
          // Not the port line.
        }
      });
    });
    await assertNodeProcess(child.pid as number, [script]);
    return {
      pid: child.pid as number,
      port: announced.port as number,
      announced,
      inspectorPort: inspector.port,
      stop: () => stopChild(child),
    };
  } catch (error) {
    await stopChild(child);
    throw error;
  }
}

export interface Atrium extends RunningService {
  pid: number;
  inspectorPort: number;
}

/** `nodeArgs` replaces npm start's node arguments, `cwd` runs another checkout (see startService). */
export async function startAtrium(
  env: Record<string, string>,
  nodeArgs?: readonly string[],
  cwd?: string,
): Promise<Atrium> {
  const inspector = await inspectorEnv();
  const service = await startService({ ...SERVICE_ENV, ...inspector.env, ...env }, nodeArgs, cwd);
  try {
    await assertNodeProcess(service.child.pid as number, ['src/main.ts', COMPILED_ENTRY]);
  } catch (error) {
    await stopAtrium(service);
    throw error;
  }
  return Object.assign(service, { pid: service.child.pid as number, inspectorPort: inspector.port });
}

export async function stopAtrium(service: RunningService): Promise<void> {
  await stopChild(service.child, 30_000);
}

export async function wsConnectionGauge(httpPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  const match = /^atrium_ws_connections(?:\{[^}]*\})? (\d+(?:\.\d+)?)/m.exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

/** After the clients closed: waits until the gateway has let every socket go, then a little more. */
export async function waitForNoConnections(httpPort: number, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await wsConnectionGauge(httpPort)) === 0) break;
    await sleep(250);
  }
  await sleep(2_000);
}
