import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';

/** Whether a `redis-server` binary is on PATH, for tests that start a Redis of their own. */
export function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A port nothing listens on right now, chosen by the kernel. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (typeof address !== 'object' || !address) throw new Error('no port was assigned');
  return address.port;
}

/**
 * A private, throwaway redis-server (no persistence) that a test can stop and start again on the
 * same port, to play a Redis outage against the app without touching the shared Redis.
 */
export class RedisServer {
  private process: ChildProcess | undefined;

  private constructor(readonly port: number) {}

  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server and resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.process) return;
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process = child;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`redis-server did not start:\n${output}`)), 10_000);
      const fail = (error: Error) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        this.process = undefined;
        reject(error);
      };
      child.once('error', fail);
      child.once('exit', (code) => fail(new Error(`redis-server exited with ${code}:\n${output}`)));
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          child.removeAllListeners('exit');
          child.removeAllListeners('error');
          resolve();
        }
      });
    });
  }

  /** Kills the server the way a crash would (SIGKILL) and resolves once it is gone. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
}
