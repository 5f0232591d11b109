import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { configFrom } from '../src/config.js';
import { ARGON2_PARAMETERS } from '../src/modules/auth/password.js';
import { AccessTokens } from '../src/platform/auth/access-tokens.js';
import { loadKeyRing } from '../src/platform/auth/keys.js';
import { MemoryKv } from '../src/platform/kv/memory-kv.js';
import { startService } from './service.js';

/**
 * Auth benchmarks: login (argon2id-bound) and refresh-token rotation throughput in closed loops,
 * and the cost of verifying an access token, in process and over HTTP. Usage:
 * `npm run bench -- auth [--seconds N]`.
 * Writes bench/results/auth.md.
 */

const USERS = 50;
/** argon2 is CPU-bound and this is often a 2-core machine: show both ends. */
const WORKER_COUNTS = [8, 2] as const;
const REGISTER_CONCURRENCY = 4;
const HTTP_CONNECTIONS = 50;
const VERIFY_WARMUP = 2_000;
const VERIFY_CALLS = 20_000;
const ISSUE_WARMUP = 100;
const ISSUE_CALLS = 1_000;
/** Limits raised so the benchmark measures the work, not the rate limiter. */
const SERVICE_ENV = {
  LOGIN_IP_MAX_ATTEMPTS: '1000000',
  LOGIN_MAX_FAILURES: '1000',
  REGISTER_IP_MAX_ATTEMPTS: '1000000',
};

interface Credentials {
  username: string;
  password: string;
}

interface TokenPair {
  access_token: string;
  refresh_token: string;
}

interface LoopStats {
  workers: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  ok: number;
  errors: number;
  /** Error responses by HTTP status (or "network"). */
  errorsByStatus: Record<string, number>;
}

const progress = (message: string) => console.log(`[bench:auth] ${message}`);

async function post(port: number, path: string, body: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  // Always read the body, so the keep-alive connection goes back to the pool.
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : null };
}

async function login(port: number, user: Credentials): Promise<TokenPair> {
  const { status, json } = await post(port, '/api/auth/login', user);
  if (status !== 200)
    throw new Error(`login of ${user.username} answered ${status}: ${JSON.stringify(json)}`);
  return json as TokenPair;
}

async function registerUsers(port: number, count: number): Promise<{ users: Credentials[]; ms: number }> {
  const users = Array.from({ length: count }, (_, i) => ({
    username: `bench_user_${i}`,
    password: `bench-password-${i}`,
  }));
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: REGISTER_CONCURRENCY }, async () => {
      for (let i = next++; i < users.length; i = next++) {
        const user = users[i] as Credentials;
        const { status, json } = await post(port, '/api/auth/register', {
          ...user,
          accept_terms: true,
          confirm_18_plus: true,
        });
        if (status !== 201)
          throw new Error(`register ${user.username} answered ${status}: ${JSON.stringify(json)}`);
      }
    }),
  );
  return { users, ms: performance.now() - started };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))] as number;
}

/**
 * Runs `workers` closed loops for `seconds`: each worker calls `step` again as soon as the previous
 * call finished. `step` times its own request with `record`, so untimed bookkeeping stays out.
 */
async function closedLoop(
  workers: number,
  seconds: number,
  step: (worker: number, record: (ms: number, status: number | 'network') => void) => Promise<void>,
): Promise<LoopStats> {
  const latencies: number[] = [];
  const errorsByStatus: Record<string, number> = {};
  let ok = 0;
  const record = (ms: number, status: number | 'network') => {
    latencies.push(ms);
    if (status === 200) ok++;
    else errorsByStatus[status] = (errorsByStatus[status] ?? 0) + 1;
  };
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (performance.now() < deadline) await step(worker, record);
    }),
  );
  const elapsedSeconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    workers,
    requestsPerSecond: ok / elapsedSeconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    ok,
    errors: latencies.length - ok,
    errorsByStatus,
  };
}

/** Times one POST; a failed connection counts as a "network" error instead of ending the run. */
async function timedPost(
  port: number,
  path: string,
  body: unknown,
  record: (ms: number, status: number | 'network') => void,
): Promise<{ status: number; json: unknown } | undefined> {
  const started = performance.now();
  try {
    const response = await post(port, path, body);
    record(performance.now() - started, response.status);
    return response;
  } catch {
    record(performance.now() - started, 'network');
    return undefined;
  }
}

/**
 * A wrong username must cost the same time as a wrong password, or timing would reveal which
 * usernames exist. Interleaved sequential attempts, so both see the same machine load.
 */
async function failedLoginTiming(port: number, user: Credentials, attempts = 40) {
  const wrongPassword: number[] = [];
  const unknownUser: number[] = [];
  for (let i = 0; i < attempts; i++) {
    for (const [body, into] of [
      [{ username: user.username, password: 'not the password' }, wrongPassword],
      [{ username: `nobody_${i}_${Date.now()}`, password: 'not the password' }, unknownUser],
    ] as const) {
      const started = performance.now();
      await post(port, '/api/auth/login', body);
      into.push(performance.now() - started);
    }
  }
  const median = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  return { attempts, wrongPasswordMs: median(wrongPassword), unknownUserMs: median(unknownUser) };
}

async function loginThroughput(port: number, users: Credentials[], workers: number, seconds: number) {
  // Worker w logs in as users w, w + workers, w + 2 * workers, ... in turn.
  const cursors = Array.from({ length: workers }, (_, w) => w);
  return closedLoop(workers, seconds, async (worker, record) => {
    const index = cursors[worker] as number;
    cursors[worker] = index + workers < users.length ? index + workers : worker;
    await timedPost(port, '/api/auth/login', users[index], record);
  });
}

async function refreshThroughput(port: number, users: Credentials[], workers: number, seconds: number) {
  // Each worker owns one session and follows its refresh-token chain: every answer rotates it.
  const chains = await Promise.all(
    Array.from({ length: workers }, async (_, w) => ({
      user: users[w] as Credentials,
      token: (await login(port, users[w] as Credentials)).refresh_token,
    })),
  );
  return closedLoop(workers, seconds, async (worker, record) => {
    const chain = chains[worker] as (typeof chains)[number];
    const response = await timedPost(port, '/api/auth/refresh', { refresh_token: chain.token }, record);
    if (response?.status === 200) {
      chain.token = (response.json as TokenPair).refresh_token;
    } else {
      // The chain may be broken (a 401 means the service refused a token it just issued); start a
      // new session, untimed, so one failure does not turn the rest of the run into errors.
      chain.token = (await login(port, chain.user)).refresh_token;
    }
  });
}

async function autocannonGet(
  port: number,
  path: string,
  seconds: number,
  headers: Record<string, string> = {},
) {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    connections: HTTP_CONNECTIONS,
    duration: seconds,
    headers,
  });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

/** In-process cost of `AccessTokens.verify` (RS256 + revocation lookup) and `issue`, no HTTP. */
async function tokenMicrobenchmark() {
  const keyDir = await mkdtemp(join(tmpdir(), 'atrium-bench-keys-'));
  const kv = new MemoryKv();
  try {
    const config = configFrom({ DATA_DIR: keyDir });
    const tokens = new AccessTokens({
      keys: await loadKeyRing(config),
      kv,
      issuer: config.JWT_ISSUER,
      ttlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    });
    const user = {
      id: '01900000-0000-7000-8000-000000000001',
      sessionId: 'bench-session',
      roles: ['user' as const],
    };
    for (let i = 0; i < ISSUE_WARMUP; i++) await tokens.issue(user);
    let started = performance.now();
    for (let i = 0; i < ISSUE_CALLS; i++) await tokens.issue(user);
    const issueUs = ((performance.now() - started) * 1000) / ISSUE_CALLS;

    const token = await tokens.issue(user);
    // `remember: false` measures the full RS256 check every time, as on a token's first use.
    for (let i = 0; i < VERIFY_WARMUP; i++) await tokens.verify(token, { remember: false });
    started = performance.now();
    for (let i = 0; i < VERIFY_CALLS; i++) await tokens.verify(token, { remember: false });
    const verifyUs = ((performance.now() - started) * 1000) / VERIFY_CALLS;
    // Repeated use of a remembered token: expiry and the revoked-session lookup only.
    await tokens.verify(token);
    started = performance.now();
    for (let i = 0; i < VERIFY_CALLS; i++) await tokens.verify(token);
    const rememberedUs = ((performance.now() - started) * 1000) / VERIFY_CALLS;
    return { issueUs, verifyUs, rememberedUs };
  } finally {
    await kv.close();
    await rm(keyDir, { recursive: true, force: true });
  }
}

const ms = (value: number) => (value >= 10 ? value.toFixed(0) : value.toFixed(1));

function errorCell(stats: LoopStats, unauthorizedIsBug = false): string {
  const parts = Object.entries(stats.errorsByStatus).map(([status, count]) => `${count} x ${status}`);
  const cell = parts.length === 0 ? '0' : `${stats.errors} (${parts.join(', ')})`;
  if (!unauthorizedIsBug) return cell;
  return `${cell}; 401s: ${stats.errorsByStatus['401'] ?? 0}`;
}

function loopRow(label: string, stats: LoopStats, unauthorizedIsBug = false): string {
  return `| ${label}, ${stats.workers} workers | ${stats.requestsPerSecond.toFixed(1)} | ${ms(stats.p50Ms)} | ${ms(stats.p99Ms)} | ${errorCell(stats, unauthorizedIsBug)} |`;
}

export async function run(seconds: number): Promise<string> {
  const algorithm = 'argon2id';
  const { memoryCost, timeCost, parallelism } = ARGON2_PARAMETERS;
  const cores = availableParallelism();
  progress(`Node ${process.version}, ${cores} cores, ${seconds} s per load scenario`);

  progress(`token microbenchmark: ${ISSUE_CALLS} issues, ${VERIFY_CALLS} verifies...`);
  const micro = await tokenMicrobenchmark();

  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-'));
  progress('starting the service on an empty DATA_DIR (initdb + migrations)...');
  const service = await startService({ DATA_DIR: dataDir, ...SERVICE_ENV });
  try {
    const port = service.httpPort;
    progress(`registering ${USERS} users (${REGISTER_CONCURRENCY} at a time)...`);
    const registration = await registerUsers(port, USERS);

    const logins: LoopStats[] = [];
    for (const workers of WORKER_COUNTS) {
      progress(`login, ${workers} workers, ${seconds} s...`);
      logins.push(await loginThroughput(port, registration.users, workers, seconds));
    }
    const refreshes: LoopStats[] = [];
    for (const workers of WORKER_COUNTS) {
      progress(`refresh, ${workers} workers, ${seconds} s...`);
      refreshes.push(await refreshThroughput(port, registration.users, workers, seconds));
    }

    progress('failed-login timing: wrong password vs unknown username...');
    const timing = await failedLoginTiming(port, registration.users[1] as Credentials);

    const bearer = (await login(port, registration.users[0] as Credentials)).access_token;
    progress(`GET /healthz, ${HTTP_CONNECTIONS} connections, ${seconds} s...`);
    const healthz = await autocannonGet(port, '/healthz', seconds);
    progress(`GET /api/users/me, ${HTTP_CONNECTIONS} connections, ${seconds} s...`);
    const me = await autocannonGet(port, '/api/users/me', seconds, { authorization: `Bearer ${bearer}` });

    const report = `# Auth benchmark

Run ${new Date().toISOString()} on Node ${process.version}, ${cores} cores (os.availableParallelism()),
${seconds} s per load scenario, service and load generator on the same machine (embedded database,
in-process KV, empty DATA_DIR). The service ran with LOGIN_IP_MAX_ATTEMPTS=${SERVICE_ENV.LOGIN_IP_MAX_ATTEMPTS} and
LOGIN_MAX_FAILURES=${SERVICE_ENV.LOGIN_MAX_FAILURES}, so no request was rate limited.

Passwords are hashed with ${algorithm}, m = ${memoryCost} KiB, t = ${timeCost}, p = ${parallelism}
(ARGON2_PARAMETERS: the first recommended argon2id configuration of the OWASP Password Storage
Cheat Sheet). Registering ${USERS} users, ${REGISTER_CONCURRENCY} at a time, took ${(registration.ms / 1000).toFixed(1)} s
(${((USERS * 1000) / registration.ms).toFixed(1)} registrations/s).

## Login and refresh (closed loops)

Each worker sends its next request as soon as the previous answer arrived (Node fetch, keep-alive).
Login workers cycle through their own share of the ${USERS} users; refresh workers each follow one
session's refresh-token chain, presenting the token the previous answer rotated in. req/s counts
200 answers; a 401 on refresh is a bug (the token presented was the latest one).

| scenario | req/s | p50 ms | p99 ms | errors |
|---|---|---|---|---|
${logins.map((stats) => loopRow('POST /api/auth/login', stats)).join('\n')}
${refreshes.map((stats) => loopRow('POST /api/auth/refresh', stats, true)).join('\n')}

## Failed logins: wrong password vs unknown username

${timing.attempts} interleaved sequential attempts of each: median ${ms(timing.wrongPasswordMs)} ms for a wrong password,
${ms(timing.unknownUserMs)} ms for an unknown username (the unknown username is verified against a fixed argon2id
hash so both cost one full verification).

## Access-token verification

In process (AccessTokens with a generated RS256 2048-bit key and MemoryKv, no HTTP), after a warm-up:

| operation | cost |
|---|---|
| verify, first use of a token (RS256 signature + claims + revoked-session lookup), ${VERIFY_CALLS} calls | ${micro.verifyUs.toFixed(1)} µs/call |
| verify, a remembered token (expiry + revoked-session lookup), ${VERIFY_CALLS} calls | ${micro.rememberedUs.toFixed(2)} µs/call |
| issue (RS256 sign), ${ISSUE_CALLS} calls | ${micro.issueUs.toFixed(1)} µs/call |

Over HTTP (autocannon, ${HTTP_CONNECTIONS} connections, ${seconds} s each, same service run). /api/users/me
verifies the bearer token and then reads the user row, so it bounds verification plus one query:

| scenario | req/s | p50 ms | p99 ms | errors |
|---|---|---|---|---|
| GET /healthz | ${healthz.requestsPerSecond.toFixed(0)} | ${healthz.p50Ms} | ${healthz.p99Ms} | ${healthz.errors} |
| GET /api/users/me with bearer token | ${me.requestsPerSecond.toFixed(0)} | ${me.p50Ms} | ${me.p99Ms} | ${me.errors} |

/api/users/me runs at ${((me.requestsPerSecond / healthz.requestsPerSecond) * 100).toFixed(1)}% of /healthz throughput
(ratio ${(me.requestsPerSecond / healthz.requestsPerSecond).toFixed(3)}); its p99 is ${(me.p99Ms / Math.max(healthz.p99Ms, 1)).toFixed(1)}x that of /healthz.
`;
    await mkdir('bench/results', { recursive: true });
    await writeFile('bench/results/auth.md', report);
    console.log(report);
    return report;
  } finally {
    progress('stopping the service...');
    await service.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
