import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface RunningService {
  child: ChildProcess;
  httpPort: number;
  wsPort: number;
  /** Milliseconds from spawn until /healthz answered 200. */
  readyMs: number;
  stop(): Promise<void>;
}

/**
 * Starts the service exactly as `npm start` does (the CLI through tsx), in its own process so the
 * load generator never shares its event loop, and waits until /healthz answers.
 */
export async function startService(env: Record<string, string>): Promise<RunningService> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
    env: { ...process.env, HTTP_PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info', ...env },
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
