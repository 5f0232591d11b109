import { spawnSync } from 'node:child_process';
import { chmod, lstat, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ControlChannel, type ControlContext } from '../../src/platform/control-channel.js';
import { callControl } from '../../src/platform/control-client.js';
import { createLogger } from '../../src/platform/log.js';

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

describe('the control channel', () => {
  let dataDir: string;
  let logged: { msg: string }[];
  const channels: ControlChannel[] = [];

  const log = () =>
    createLogger(
      { LOG_LEVEL: 'info' },
      new Writable({
        write(chunk, _encoding, done) {
          logged.push(JSON.parse(String(chunk)) as { msg: string });
          done();
        },
      }),
    );

  /** A channel with an echo command, one that fails and one that waits for `release`. */
  const channel = (options: Partial<ConstructorParameters<typeof ControlChannel>[0]> = {}) => {
    const created = new ControlChannel({ log: log(), ...options })
      .register('echo', {
        args: z.object({ text: z.string() }).strict(),
        run: async (ctx: ControlContext, { text }) => ({
          exitCode: 0,
          stdout: [`${ctx.actor.kind}: ${text}`],
          stderr: [],
        }),
      })
      .register('fail', {
        args: z.object({}),
        run: async () => {
          throw new Error('the disk is on fire');
        },
      })
      .register('wait', {
        args: z.object({}),
        run: () => {
          started.resolve();
          return waiting.promise;
        },
      });
    channels.push(created);
    return created;
  };
  let waiting: Deferred<{ exitCode: number; stdout: string[]; stderr: string[] }>;
  let started: Deferred<void>;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'atrium-ctlp-'));
    logged = [];
    waiting = deferred();
    started = deferred();
  });

  afterEach(async () => {
    waiting.resolve({ exitCode: 0, stdout: [], stderr: [] });
    for (const created of channels.splice(0)) await created.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers a request with its command output, the caller named as the CLI', async () => {
    await expect(channel().listen(dataDir)).resolves.toBe('listening');
    expect(await callControl(dataDir, { command: 'echo', args: { text: 'hi' } })).toEqual({
      ok: true,
      exit_code: 0,
      stdout: ['cli: hi'],
      stderr: [],
    });
  });

  it('does not steal the socket of a live channel on the same DATA_DIR', async () => {
    await channel().listen(dataDir);
    await expect(channel().listen(dataDir)).resolves.toBe('in use');
    expect(logged.map((line) => line.msg)).toContain(
      'control channel off: another live server on this DATA_DIR serves it',
    );
    expect(await callControl(dataDir, { command: 'echo', args: { text: 'still here' } })).toMatchObject({
      ok: true,
      stdout: ['cli: still here'],
    });
  });

  it('opens no channel in a DATA_DIR that group or others may write to', async () => {
    await chmod(dataDir, 0o777);
    await expect(channel().listen(dataDir)).resolves.toBe('unsafe');
    await expect(lstat(join(dataDir, 'control.sock'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('leaves a file that is not a socket alone and opens no channel', async () => {
    await writeFile(join(dataDir, 'control.sock'), 'my notes');
    await expect(channel().listen(dataDir)).resolves.toBe('unavailable');
    expect(await readFile(join(dataDir, 'control.sock'), 'utf8')).toBe('my notes');
  });

  it('tells the CLI nobody listens when there is no socket file or only a stale one', async () => {
    expect(await callControl(dataDir, { command: 'echo', args: { text: 'x' } })).toBeUndefined();
    const path = join(dataDir, 'control.sock');
    const crashed = spawnSync(process.execPath, [
      '-e',
      "require('net').createServer().listen(process.argv[1], () => process.exit(0))",
      path,
    ]);
    expect(crashed.status).toBe(0);
    expect(await callControl(dataDir, { command: 'echo', args: { text: 'x' } })).toBeUndefined();
  });

  it('answers INTERNAL when a command throws, logs it, and keeps serving', async () => {
    await channel().listen(dataDir);
    expect(await callControl(dataDir, { command: 'fail' })).toEqual({
      ok: false,
      error: { code: 'INTERNAL', message: 'The command failed; the server log has the details.' },
    });
    expect(logged.map((line) => line.msg)).toContain('control command failed');
    expect(await callControl(dataDir, { command: 'echo', args: { text: 'ok' } })).toMatchObject({ ok: true });
  });

  it('answers SERVICE_UNAVAILABLE when a command outlives its timeout', async () => {
    await channel({ commandTimeoutMs: 50 }).listen(dataDir);
    expect(await callControl(dataDir, { command: 'wait' })).toMatchObject({
      ok: false,
      error: { code: 'SERVICE_UNAVAILABLE' },
    });
  });

  it('closes a connection that sends nothing', async () => {
    await channel({ idleTimeoutMs: 50 }).listen(dataDir);
    const socket = createConnection({ path: join(dataDir, 'control.sock') });
    await new Promise((resolve) => socket.once('close', resolve));
  });

  it('lets a running command answer before close removes the socket file', async () => {
    const created = channel();
    await created.listen(dataDir);
    const answer = callControl(dataDir, { command: 'wait' });
    await started.promise;
    const closed = created.close();
    waiting.resolve({ exitCode: 3, stdout: ['done'], stderr: [] });
    expect(await answer).toEqual({ ok: true, exit_code: 3, stdout: ['done'], stderr: [] });
    await closed;
    await expect(lstat(join(dataDir, 'control.sock'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses to register two commands under one name', () => {
    expect(() => channel().register('echo', { args: z.object({}), run: () => waiting.promise })).toThrow(
      /registered twice/,
    );
  });
});
