import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { entryPoints } from '../../packages/client/build-package.js';

/**
 * The example page's server: the page, its script bundled by esbuild, the gateway's URL, and a
 * reverse proxy of /api/ to Atrium, so the page calls the REST API on its own origin (the API
 * sends no CORS headers). The gateway needs no proxy: browsers open WebSockets across origins.
 */

const here = dirname(fileURLToPath(import.meta.url));

export interface DevServerOptions {
  /** Atrium's HTTP base URL, e.g. http://127.0.0.1:8080. */
  atriumHttpUrl: string;
  /** Atrium's gateway, e.g. ws://127.0.0.1:8081/ws. */
  atriumWsUrl: string;
  /** 0 picks a free port. */
  port: number;
  host?: string;
  /** The directory of the page (its index.html and main.ts): this example's unless given. */
  pageDir?: string;
}

export interface DevServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The page imports @atrium/client by name, as an app that installed it does. In this repository
 * the package is its source: the import resolves to the entry points `npm run build:client`
 * compiles, so the page runs the same code the package ships.
 */
const clientPackageFromSource: Plugin = {
  name: 'atrium-client-from-source',
  setup(builder) {
    builder.onResolve({ filter: /^@atrium\/client(\/chunk-codec)?$/ }, ({ path }) => ({
      path: path.endsWith('/chunk-codec') ? entryPoints['chunk-codec'] : entryPoints.index,
    }));
  },
};

/** The page's script for browsers. A Node builtin imported anywhere on the way fails the bundle. */
async function bundlePage(pageDir: string): Promise<Uint8Array> {
  const result = await build({
    entryPoints: [join(pageDir, 'main.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    sourcemap: 'inline',
    write: false,
    logLevel: 'silent',
    plugins: [clientPackageFromSource],
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error('esbuild produced no bundle for main.ts.');
  return output.contents;
}

function proxy(target: URL, incoming: IncomingMessage, response: ServerResponse): void {
  const upstream = request(
    new URL(incoming.url ?? '/', target),
    { method: incoming.method, headers: { ...incoming.headers, host: target.host } },
    (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    },
  );
  upstream.on('error', (error) => {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(`Atrium at ${target.origin} did not answer: ${error.message}\n`);
  });
  incoming.pipe(upstream);
}

/** Bundles the page once, then serves it until `close`. examples/web-world serves its page with it too. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const target = new URL(options.atriumHttpUrl);
  const pageDir = options.pageDir ?? here;
  const [page, script] = await Promise.all([readFile(join(pageDir, 'index.html')), bundlePage(pageDir)]);
  const config = JSON.stringify({ wsUrl: options.atriumWsUrl });

  const server = createServer((incoming, response) => {
    const path = new URL(incoming.url ?? '/', 'http://page').pathname;
    if (path.startsWith('/api/')) return proxy(target, incoming, response);
    const served: Record<string, [string, string | Uint8Array]> = {
      '/': ['text/html; charset=utf-8', page],
      '/main.js': ['text/javascript; charset=utf-8', script],
      '/config.json': ['application/json', config],
    };
    const [type, body] = served[path] ?? ['text/plain', 'Not found\n'];
    response.writeHead(path in served ? 200 : 404, { 'content-type': type, 'cache-control': 'no-store' });
    response.end(body);
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/`,
    close: () =>
      new Promise((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
