import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestSocket } from './helpers/ws-client.js';

interface LogLine {
  msg: string;
  httpPort?: number;
  wsPort?: number;
  [key: string]: unknown;
}

/** The real CLI in a child process, through tsx as `npm start` runs it, on free ports and a temp DATA_DIR. */
function startService(dataDir: string, extraEnv: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      HTTP_PORT: '0',
      WS_PORT: '0',
      SHUTDOWN_GRACE_MS: '2000',
      LOG_LEVEL: 'info',
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
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, lines, listening, exited };
}

describe('service lifecycle', () => {
  let dataDir: string;
  let service: ReturnType<typeof startService>;
  let child: ChildProcess;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'atrium-life-'));
    service = startService(dataDir);
    child = service.child;
  });

  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('serves /healthz after start and logs the ports it chose', async () => {
    const listening = await service.listening;
    expect(listening.httpPort).toBeGreaterThan(0);
    expect(listening.wsPort).toBeGreaterThan(0);
    const response = await fetch(`http://127.0.0.1:${listening.httpPort}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok' });
  });

  it('shuts down on SIGTERM: closes sockets with 1001, stops accepting, exits 0', async () => {
    const { httpPort, wsPort } = await service.listening;
    const socket = await TestSocket.connect(`ws://127.0.0.1:${wsPort}/ws`);
    child.kill('SIGTERM');
    expect((await socket.closed).code).toBe(1001);
    expect(await service.exited).toBe(0);
    expect(service.lines.map((l) => l.msg)).toContain('shutting down');
    await expect(fetch(`http://127.0.0.1:${httpPort}/healthz`)).rejects.toThrow();
  });
});

describe('uWebSockets.js JavaScript fallback', () => {
  it('is reported by /healthz and a startup warning, and still answers frames', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'atrium-fallback-'));
    // The flag makes the uWS package load its JS shim, as it does on a Node without a native build.
    const service = startService(dataDir, { UWS_USE_FALLBACK: '1' });
    try {
      const { httpPort, wsPort } = await service.listening;
      const health = (await (await fetch(`http://127.0.0.1:${httpPort}/healthz`)).json()) as {
        gateway: unknown;
      };
      expect(health.gateway).toEqual({ transport: 'uws-js-fallback', native: false });
      expect(service.lines.some((l) => /slow JavaScript fallback/.test(l.msg))).toBe(true);
      const socket = await TestSocket.connect(`ws://127.0.0.1:${wsPort}/ws`);
      socket.sendFrame({ t: 'ping', id: 4 });
      expect(await socket.next((f) => f.t === 'pong')).toMatchObject({ id: 4 });
      socket.close();
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

/** The node flags before the script in a command line such as `node --flag dist/src/main.js serve`. */
function nodeFlags(words: string[]): string[] {
  expect(words[0]).toBe('node');
  const flags: string[] = [];
  for (let i = 1; i < words.length && words[i]?.startsWith('--'); i++) {
    // The tsx loader is how `npm start` runs TypeScript; the image runs the compiled JavaScript.
    if (words[i] === '--import') i++;
    else flags.push(words[i] as string);
  }
  return flags;
}

describe('runtime flags', () => {
  it('are the same for npm start and the Docker image, which both fix the young generation size', async () => {
    const { scripts } = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: { start: string } };
    const startFlags = nodeFlags(scripts.start.split(/\s+/));
    const cmd = /^CMD (\[.*\])$/m.exec(await readFile('Dockerfile', 'utf8'))?.[1];
    const dockerFlags = nodeFlags(JSON.parse(cmd ?? '[]') as string[]);
    expect(startFlags.some((flag) => flag.startsWith('--min-semi-space-size='))).toBe(true);
    expect(dockerFlags).toEqual(startFlags);
  });
});
