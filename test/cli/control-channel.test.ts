import { spawn, spawnSync } from 'node:child_process';
import { lstat, rm, stat } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD } from '../helpers/accounts.js';
import {
  PROCESS_TEST_TIMEOUT_MS,
  preparedDataDir,
  registerOver,
  startService,
} from '../helpers/service-process.js';

/**
 * One embedded server for the whole file (each embedded start costs an initdb): the CLI talks to
 * it through DATA_DIR's control socket while it holds the database, then falls back to opening
 * the database itself once it stopped. Always embedded: that is where the channel is needed.
 */
const embedded = { DATABASE_URL: '', REDIS_URL: '' };

/** The real CLI in a child process, as an operator runs it. */
function cli(dataDir: string, ...args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    env: { ...process.env, ...embedded, DATA_DIR: dataDir, LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (status) => resolve({ status, stdout, stderr })),
  );
}

/** Sends raw bytes to the control socket and collects every answer line until the server closes. */
function exchange(path: string, payload: string | Buffer, { waitForClose = false } = {}) {
  return new Promise<{ replies: unknown[]; closed: boolean }>((resolve, reject) => {
    const socket = createConnection({ path });
    let text = '';
    const expected = waitForClose ? Number.POSITIVE_INFINITY : String(payload).split('\n').length - 1;
    const replies = () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as unknown);
    socket.on('data', (chunk) => {
      text += chunk;
      if (replies().length >= expected) {
        socket.destroy();
        resolve({ replies: replies(), closed: false });
      }
    });
    // The server may cut a client that is still writing a refused request: what it answered counts.
    socket.on('error', (error) => (text ? undefined : reject(error)));
    socket.on('close', () => resolve({ replies: replies(), closed: true }));
    socket.write(payload);
  });
}

async function signIn(httpUrl: string, username: string) {
  const login = await fetch(`${httpUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password: PASSWORD }),
  });
  expect(login.status).toBe(200);
  const { access_token } = (await login.json()) as { access_token: string };
  const me = await fetch(`${httpUrl}/api/users/me`, { headers: { authorization: `Bearer ${access_token}` } });
  return ((await me.json()) as { roles: string[] }).roles;
}

describe('the CLI and a running server', () => {
  let dataDir: string;
  let socketPath: string;
  let service: ReturnType<typeof startService>;
  let httpUrl: string;
  let username: string;

  beforeAll(async () => {
    dataDir = await preparedDataDir('atrium-ctl-');
    socketPath = join(dataDir, 'control.sock');
    // A crashed server's socket: the file stays, nothing accepts on it (exit skips closing it).
    const crashed = spawnSync(
      process.execPath,
      ['-e', "require('net').createServer().listen(process.argv[1], () => process.exit(0))", socketPath],
      { encoding: 'utf8' },
    );
    expect(crashed.status).toBe(0);
    expect((await lstat(socketPath)).isSocket()).toBe(true);
    service = startService(dataDir, embedded);
    const { httpPort } = await service.listening;
    httpUrl = `http://127.0.0.1:${httpPort}`;
    username = (await registerOver(httpUrl)).user.username;
  }, PROCESS_TEST_TIMEOUT_MS);

  afterAll(async () => {
    if (service.child.exitCode === null) service.child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it(
    'replaces a stale socket file left by a crashed server and serves on it, readable and writable by its owner only',
    async () => {
      expect(service.lines.map((line) => line.msg)).toContain(
        'removed a stale control socket (its server is gone)',
      );
      expect(service.lines.map((line) => line.msg)).toContain('control channel listening');
      const file = await stat(socketPath);
      expect(file.isSocket()).toBe(true);
      expect(file.mode & 0o777).toBe(0o600);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'grants a role while the server holds the embedded database, effective from the next login',
    async () => {
      expect(await signIn(httpUrl, username)).toEqual(['user']);
      const granted = await cli(dataDir, 'admin', 'grant', username, 'admin');
      expect(granted).toMatchObject({ status: 0, stderr: '' });
      expect(granted.stdout).toBe(
        `${username} now has roles: user, admin (effective from the next login or token refresh)\n`,
      );
      expect(await signIn(httpUrl, username)).toEqual(['user', 'admin']);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'answers an unknown user with exit code 1 and the same line as without a server, and verifies the ledger',
    async () => {
      const [unknown, verified] = await Promise.all([
        cli(dataDir, 'admin', 'grant', 'ghost_user', 'moderator'),
        cli(dataDir, 'economy', 'verify'),
      ]);
      expect(unknown).toEqual({ status: 1, stdout: '', stderr: 'No user named ghost_user.\n' });
      expect(verified).toEqual({
        status: 0,
        stdout: 'ledger verified: every balance equals the sum of its entries\n',
        stderr: '',
      });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'answers malformed, unknown and invalid requests with an error and keeps serving',
    async () => {
      const { replies } = await exchange(
        socketPath,
        [
          'not json',
          '[1, 2]',
          JSON.stringify({ command: 'shell.exec', args: { line: 'rm -rf /' } }),
          JSON.stringify({ command: '__proto__' }),
          JSON.stringify({ command: 'admin.grant', args: { username: 5, role: 'admin' } }),
          JSON.stringify({ command: 'admin.grant', args: { username, role: 'moderator', sudo: true } }),
          JSON.stringify({ command: 'economy.verify' }),
        ]
          .map((line) => `${line}\n`)
          .join(''),
      );
      expect(replies).toEqual([
        { ok: false, error: { code: 'MALFORMED_REQUEST', message: expect.any(String) } },
        { ok: false, error: { code: 'MALFORMED_REQUEST', message: expect.any(String) } },
        { ok: false, error: { code: 'NOT_FOUND', message: expect.stringContaining('admin.grant') } },
        { ok: false, error: { code: 'NOT_FOUND', message: expect.any(String) } },
        { ok: false, error: { code: 'VALIDATION_FAILED', message: expect.stringContaining('username') } },
        { ok: false, error: { code: 'VALIDATION_FAILED', message: expect.stringContaining('sudo') } },
        { ok: true, exit_code: 0, stdout: [expect.stringContaining('ledger verified')], stderr: [] },
      ]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'refuses a request line over the size limit, closes that connection and keeps serving others',
    async () => {
      const huge = await exchange(socketPath, Buffer.alloc(1024 * 1024, 'a'), { waitForClose: true });
      expect(huge.replies).toEqual([
        { ok: false, error: { code: 'PAYLOAD_TOO_LARGE', message: expect.any(String) } },
      ]);
      expect(huge.closed).toBe(true);
      const after = await exchange(socketPath, `${JSON.stringify({ command: 'economy.verify' })}\n`);
      expect(after.replies).toEqual([expect.objectContaining({ ok: true, exit_code: 0 })]);
      expect((await fetch(`${httpUrl}/healthz`)).status).toBe(200);
      // No refused request changed anything: the moderator role asked for with a stray field is not there.
      expect(await signIn(httpUrl, username)).toEqual(['user', 'admin']);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'removes the socket on shutdown, and the CLI then opens the database itself with the same output',
    async () => {
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      await expect(lstat(socketPath)).rejects.toMatchObject({ code: 'ENOENT' });
      const revoked = await cli(dataDir, 'admin', 'revoke', username, 'admin');
      expect(revoked).toEqual({
        status: 0,
        stdout: `${username} now has roles: user (effective from the next login or token refresh)\n`,
        stderr: '',
      });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
