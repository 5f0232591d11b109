import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startDevServer } from '../web-client/dev-server.js';

/**
 * `npm run demo`: Atrium and the web world with one command. It starts the service as `npm start`
 * does, on its embedded defaults (PGlite in ./data, the in-process store, HTTP 8080 and the
 * gateway on 8081; the service's own settings, DATABASE_URL and the rest, apply when set), waits
 * for it to listen, then serves the page on PORT (default 5174). Ctrl-C stops both.
 */

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');

const service = spawn(
  process.execPath,
  [
    '--min-semi-space-size=1',
    '--max-semi-space-size=8',
    '--v8-pool-size=1',
    '--import',
    'tsx',
    'src/main.ts',
    'serve',
  ],
  { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
);
service.once('exit', (code, signal) => {
  console.error(`Atrium exited (${signal ?? code}).`);
  process.exit(code ?? 1);
});

const listening = new Promise<{ httpPort: number; wsPort: number; host: string }>((resolve) => {
  createInterface({ input: service.stdout }).on('line', (line) => {
    // The service logs JSON lines; the demo passes them on and waits for the one naming its ports.
    process.stdout.write(`${line}\n`);
    try {
      const entry = JSON.parse(line) as { msg?: string; httpPort: number; wsPort: number; host: string };
      if (entry.msg === 'atrium listening') resolve(entry);
    } catch {
      // Not a log line.
    }
  });
});

const { httpPort, wsPort, host } = await listening;
// A wildcard address is reached on loopback from this machine.
const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
const page = await startDevServer({
  atriumHttpUrl: `http://${reachable}:${httpPort}`,
  atriumWsUrl: `ws://${reachable}:${wsPort}/ws`,
  port: Number(process.env.PORT ?? 5174),
  pageDir: here,
});
console.log(`\nAtrium web world: open ${page.url} (two browsers or a private window for a second user)\n`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    service.removeAllListeners('exit');
    service.kill('SIGTERM');
    service.once('exit', () => void page.close().then(() => process.exit(0)));
  });
}
