import { spawn, spawnSync } from 'node:child_process';
import { cp, mkdtemp } from 'node:fs/promises';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { inject } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { callControl } from '../../src/platform/control-client.js';
import { PASSWORD, uniqueUsername } from './accounts.js';
import { TEST_QUERY_TIMEOUT_MS } from './database.js';

export interface LogLine {
  msg: string;
  httpPort?: number;
  wsPort?: number;
  [key: string]: unknown;
}

export type ServiceProcess = ReturnType<typeof startService>;

/**
 * The timeout of a test that runs the service or the CLI as a process: tsx compiles the source
 * and the embedded database opens (a fresh DATA_DIR also unpacks the cached cluster, or makes it),
 * seconds on a quiet machine and tens of seconds on a loaded two-core one.
 */
export const PROCESS_TEST_TIMEOUT_MS = 120_000;

/**
 * A fresh DATA_DIR for a service or CLI process. In embedded mode it already holds the migrated
 * database of the run's template, so the child skips unpacking it; a test of what a first start
 * does uses an empty `mkdtemp` instead.
 */
export async function preparedDataDir(prefix: string): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), prefix));
  const seed = inject('embeddedDataDirSeed');
  if (seed) await cp(seed, dataDir, { recursive: true });
  return dataDir;
}

/**
 * How long a test app's or a service process's Redis command may wait for its answer: seconds
 * rather than production's 500 ms, since on a loaded 2-core CI machine a command can wait past
 * 500 ms and turn a test's call into a 503. The tests of command timeouts run a Redis of their own
 * behind a proxy, with their own.
 */
export const TEST_REDIS_COMMAND_TIMEOUT_MS = 10_000;

/**
 * The test apps' bounds on a statement, a connection and a Redis command (testConfig), as the env
 * of a service process: with production's, processes just started on a loaded machine answered
 * tests' calls 503.
 */
const processBounds = (): Record<string, string> => ({
  DATABASE_QUERY_TIMEOUT_MS: String(TEST_QUERY_TIMEOUT_MS),
  DATABASE_CONNECT_TIMEOUT_MS: String(TEST_QUERY_TIMEOUT_MS),
  REDIS_COMMAND_TIMEOUT_MS: String(TEST_REDIS_COMMAND_TIMEOUT_MS),
});

/**
 * The real CLI in a child process, through tsx as `npm start` runs it, on free ports, with the
 * test apps' bounds on the database and Redis (`extraEnv` may set its own). `listening` resolves
 * with the `atrium listening` log line, which names the ports it chose.
 *
 * One process unless `extraEnv` sets WORKERS: the test run's DATABASE_URL and REDIS_URL put the
 * child in production mode, where WORKERS defaults to a worker per core, and a test that reads the
 * child's pid, signals it or counts its log lines means the process that serves. A test of worker
 * mode sets WORKERS, or `WORKERS: ''` for the production default.
 */
export function startService(dataDir: string, extraEnv: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
    env: {
      ...process.env,
      WORKERS: '1',
      DATA_DIR: dataDir,
      HTTP_PORT: '0',
      WS_PORT: '0',
      SHUTDOWN_GRACE_MS: '2000',
      LOG_LEVEL: 'info',
      ...processBounds(),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const listening = new Promise<LogLine>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as LogLine;
        lines.push(parsed);
        if (parsed.msg === 'atrium listening') resolve(parsed);
      } catch {
        // Non-JSON output (for example a library's warning) is not a log line.
      }
    });
    child.once('exit', (code) => reject(new Error(`service exited early with ${code}`)));
  });
  // A test that never awaits `listening` must not fail on an unhandled rejection when it exits.
  listening.catch(() => {});
  // 'close', not 'exit': 'exit' may come before the last lines of output were read.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, lines, listening, exited };
}

/**
 * Runs the real CLI to its end in a child process, through tsx as `npm run atrium` does, on the
 * embedded defaults unless `env` says otherwise; answers its exit status and output.
 */
export function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = PROCESS_TEST_TIMEOUT_MS,
) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', ...env },
    encoding: 'utf8',
    timeout: timeoutMs,
  });
}

/** Registers an account on a service process through its real HTTP port. */
export async function registerOver(httpUrl: string): Promise<TokenResponse> {
  const response = await fetch(`${httpUrl}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      username: uniqueUsername(),
      password: PASSWORD,
      accept_terms: true,
      confirm_18_plus: true,
    }),
  });
  if (response.status !== 201)
    throw new Error(`register failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as TokenResponse;
}

/**
 * An account given the admin role through the running service's control channel (as `atrium
 * admin grant` does), signed in again so its token carries the role.
 */
export async function adminOver(httpUrl: string, dataDir: string): Promise<TokenResponse> {
  const { user } = await registerOver(httpUrl);
  // The control channel opens once the service listens: retried until it answers.
  const reply = await eventually(
    () =>
      callControl(dataDir, {
        command: 'admin.grant',
        args: { username: user.username, role: 'admin' },
      }).catch(() => undefined),
    'the control channel',
  );
  if (!(reply as { ok?: boolean }).ok) throw new Error(`admin.grant failed: ${JSON.stringify(reply)}`);
  const login = await fetch(`${httpUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: user.username, password: PASSWORD }),
  });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${await login.text()}`);
  return (await login.json()) as TokenResponse;
}

/** Polls `check` until it returns a value, for up to `deadlineMs` (a loaded machine is slow). */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  what: string,
  deadlineMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * GET /healthz on a connection of its own: node:cluster hands each new connection to the next
 * worker in turn, while fetch would keep reusing one kept-alive connection to one worker. A
 * stopped worker never answers; its connection times out.
 */
export function healthOnNewConnection<Health>(httpUrl: string): Promise<Health> {
  return new Promise<Health>((resolve, reject) => {
    const call = get(`${httpUrl}/healthz`, { agent: false, timeout: 5000 }, (response) => {
      let body = '';
      response.on('data', (chunk) => {
        body += chunk;
      });
      response.on('end', () => resolve(JSON.parse(body) as Health));
    });
    call.on('timeout', () => call.destroy(new Error('no answer')));
    call.on('error', reject);
  });
}
