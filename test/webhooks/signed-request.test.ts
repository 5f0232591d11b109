import { execFile, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { checkUrl, type Resolve } from '../../src/modules/webhooks/address-guard.js';
import { attemptDelivery } from '../../src/modules/webhooks/signed-request.js';
import { newSecret, signedHeaders } from '../../src/modules/webhooks/signing.js';

const BODY = JSON.stringify({
  id: 'd1',
  type: 'user.deleted',
  created_at: '2024-05-01T12:00:00.000Z',
  data: {},
});
const HEADERS = signedHeaders('d1', BODY, [newSecret()], new Date());

interface Received {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A receiver on `host` that records each request with its body before `handle` answers it. */
async function receiver(handle: Handler, host = '127.0.0.1', server: Server = createHttpServer()) {
  const requests: Received[] = [];
  let connections = 0;
  server.on('connection', () => connections++);
  server.on('request', async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    requests.push({
      method: req.method,
      url: req.url,
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    });
    handle(req, res);
  });
  servers.push(server);
  await once(server.listen(0, host), 'listening');
  const { port } = server.address() as AddressInfo;
  return { port, requests, connections: () => connections };
}

/** A resolver that counts its calls and answers `answers` in turn, the last one from then on. */
function resolverAnswering(...answers: string[][]): Resolve & { calls: number } {
  const resolve = Object.assign(
    async () => {
      const answer = answers[Math.min(resolve.calls, answers.length - 1)] ?? [];
      resolve.calls += 1;
      return answer.map((address) => ({ address }));
    },
    { calls: 0 },
  );
  return resolve;
}

const answer =
  (status: number, body = '', headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };

describe('a signed delivery attempt', () => {
  it('POSTs the body and headers to the address it checked, with the URL host in Host, and reports the 2xx', async () => {
    const { port, requests } = await receiver(answer(204));
    // hooks.test is no name the system resolves: any lookup but the injected one would fail.
    const resolve = resolverAnswering(['127.0.0.1'], ['10.255.255.1']);
    const outcome = await attemptDelivery(`http://hooks.test:${port}/in/atrium?token=a%20b`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      resolve,
      timeoutMs: 5_000,
    });
    expect(outcome).toEqual({ status: 204, error: null });
    expect(resolve.calls).toBe(1);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      method: 'POST',
      url: '/in/atrium?token=a%20b',
      body: BODY,
      headers: {
        host: `hooks.test:${port}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(BODY)),
        ...HEADERS,
      },
    });
  });

  it('connects to an IPv6 literal address', async () => {
    const { port, requests } = await receiver(answer(200, 'ok'), '::1');
    const outcome = await attemptDelivery(`http://[::1]:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      timeoutMs: 5_000,
    });
    expect(outcome).toEqual({ status: 200, error: null });
    expect(requests[0]?.headers.host).toBe(`[::1]:${port}`);
  });

  it('checks the address again and refuses, without connecting, a name that now resolves to 127.0.0.1', async () => {
    const { port, connections } = await receiver(answer(204));
    const resolve = resolverAnswering(['93.184.216.34'], ['127.0.0.1']);
    const url = `http://rebind.test:${port}/`;
    const options = { allowPrivateNetworks: false, resolve, timeoutMs: 5_000 };
    expect(await checkUrl(url, options)).toMatchObject({ ok: true });
    expect(await attemptDelivery(url, BODY, HEADERS, options)).toEqual({
      status: null,
      error:
        'address refused, not connected: url names rebind.test, which resolves to 127.0.0.1, a loopback address (private networks are not allowed)',
    });
    expect(connections()).toBe(0);
  });

  it('fails, without connecting, when the name no longer resolves', async () => {
    const { port, connections } = await receiver(answer(204));
    const outcome = await attemptDelivery(`http://gone.test:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      resolve: resolverAnswering([]),
      timeoutMs: 5_000,
    });
    expect(outcome).toEqual({
      status: null,
      error: 'address refused, not connected: url names gone.test, which does not resolve',
    });
    expect(connections()).toBe(0);
  });

  it('does not follow a redirect: a 302 fails the attempt with status 302', async () => {
    const { port, requests } = await receiver(answer(302, '', { location: '/elsewhere' }));
    const outcome = await attemptDelivery(`http://127.0.0.1:${port}/in`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      timeoutMs: 5_000,
    });
    expect(outcome).toEqual({ status: 302, error: 'HTTP 302' });
    expect(requests.map(({ url }) => url)).toEqual(['/in']);
  });

  it('fails on a status outside 2xx with the answer body as the error', async () => {
    const { port } = await receiver(answer(503, 'busy, try later'));
    const outcome = await attemptDelivery(`http://127.0.0.1:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      timeoutMs: 5_000,
    });
    expect(outcome).toEqual({ status: 503, error: 'busy, try later' });
  });

  it('keeps only the first 500 characters of a large error body', async () => {
    const large = `${'é'.repeat(300)}${'x'.repeat(200_000)}`;
    const { port } = await receiver(answer(500, large));
    const outcome = await attemptDelivery(`http://127.0.0.1:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      timeoutMs: 5_000,
    });
    expect(outcome).toEqual({ status: 500, error: large.slice(0, 500) });
  });

  it('times out on a receiver that never answers, with no status', async () => {
    const { port, requests } = await receiver(() => {});
    const outcome = await attemptDelivery(`http://127.0.0.1:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      timeoutMs: 200,
    });
    expect(outcome).toEqual({ status: null, error: 'timed out after 200 ms' });
    expect(requests).toHaveLength(1);
  });

  it('fails at the deadline with the status and the body so far when an error body never finishes', async () => {
    const { port } = await receiver((_req, res) => {
      res.writeHead(503);
      res.write('overloaded, ');
    });
    const outcome = await attemptDelivery(`http://127.0.0.1:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      // Ample for the answer to arrive; the deadline then ends the body.
      timeoutMs: 1_000,
    });
    expect(outcome).toEqual({ status: 503, error: 'overloaded, ' });
  });

  it('counts the name resolution in the timeout', async () => {
    const { port, connections } = await receiver(answer(204));
    const outcome = await attemptDelivery(`http://slow-dns.test:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      resolve: () => new Promise(() => {}),
      timeoutMs: 100,
    });
    expect(outcome).toEqual({ status: null, error: 'timed out after 100 ms' });
    expect(connections()).toBe(0);
  });

  it('reports a 2xx as soon as it comes, and the deadline ends a body that never finishes', async () => {
    let closed!: Promise<unknown>;
    const { port } = await receiver((req, res) => {
      closed = once(req.socket, 'close');
      res.writeHead(200);
      res.write('still sending');
    });
    const outcome = await attemptDelivery(`http://127.0.0.1:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      // Ample for the answer to arrive; the deadline then ends the body.
      timeoutMs: 1_000,
    });
    expect(outcome).toEqual({ status: 200, error: null });
    await closed;
  });

  it('fails with the connection error when nothing listens, with no status', async () => {
    const { port } = await receiver(answer(204));
    const server = servers.pop() as Server;
    server.close();
    await once(server, 'close');
    const outcome = await attemptDelivery(`http://127.0.0.1:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      timeoutMs: 5_000,
    });
    expect(outcome).toEqual({
      status: null,
      error: `request failed: connect ECONNREFUSED 127.0.0.1:${port}`,
    });
  });
});

describe('a signed delivery attempt over https', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  let dir = '';

  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A self-signed certificate for `name` (its own CA), made by the openssl command. */
  async function certificateFor(name: string) {
    dir = await mkdtemp(join(tmpdir(), 'webhook-tls-'));
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
        ...['-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`],
        ...['-addext', `subjectAltName=DNS:${name}`],
      ],
      { stdio: 'ignore' },
    );
    return { key: await readFile(key), cert: await readFile(cert), certPath: cert };
  }

  /** An https receiver that records the SNI name of every handshake, finished or not. */
  async function httpsReceiver(tls: { key: Buffer; cert: Buffer }) {
    const names: string[] = [];
    const server = createHttpsServer({
      ...tls,
      SNICallback: (servername, done) => {
        names.push(servername);
        done(null);
      },
    });
    return { ...(await receiver(answer(204), '127.0.0.1', server)), names };
  }

  it('sends the URL host as SNI and refuses a certificate it does not trust', async () => {
    const { port, requests, names } = await httpsReceiver(await certificateFor('hooks.test'));
    const outcome = await attemptDelivery(`https://hooks.test:${port}/`, BODY, HEADERS, {
      allowPrivateNetworks: true,
      resolve: resolverAnswering(['127.0.0.1']),
      timeoutMs: 5_000,
    });
    expect(outcome).toEqual({ status: null, error: 'request failed: self-signed certificate' });
    expect(names).toEqual(['hooks.test']);
    expect(requests).toHaveLength(0);
  });

  it("checks the certificate against the URL's host name, not the address it connects to", async () => {
    const tls = await certificateFor('hooks.test');
    const { port, requests, names } = await httpsReceiver(tls);
    // The certificate is trusted the way an operator would: NODE_EXTRA_CA_CERTS, read at startup.
    const script = `
      import { attemptDelivery } from './src/modules/webhooks/signed-request.ts';
      const options = { allowPrivateNetworks: true, timeoutMs: 5000, resolve: async () => [{ address: '127.0.0.1' }] };
      const outcomes = [];
      for (const host of ['hooks.test', 'other.test']) {
        outcomes.push(await attemptDelivery('https://' + host + ':${port}/in', ${JSON.stringify(BODY)}, ${JSON.stringify(HEADERS)}, options));
      }
      console.log(JSON.stringify(outcomes));
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: root, env: { ...process.env, NODE_EXTRA_CA_CERTS: tls.certPath } },
    );
    expect(JSON.parse(stdout)).toEqual([
      { status: 204, error: null },
      {
        status: null,
        error:
          "request failed: Hostname/IP does not match certificate's altnames: Host: other.test. is not in the cert's altnames: DNS:hooks.test",
      },
    ]);
    expect(names).toEqual(['hooks.test', 'other.test']);
    expect(requests.map(({ headers }) => headers.host)).toEqual([`hooks.test:${port}`]);
  });
});
