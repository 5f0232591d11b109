import { connect } from 'node:net';
import type { TestApp } from '../helpers/app.js';
import { documentedCodes, type Outcome, preview } from './harness.js';
import type { RestCase } from './rest-cases.js';
import { releaseAll, toJson } from './values.js';

const RAW_TIMEOUT_MS = 5000;

/** The fuzzed app and the credentials of the user whose token signs the authenticated half. */
export interface RestTarget {
  app: TestApp;
  token: string;
  /** A live game server's token, scoped to the world it was spawned for. */
  serverToken: string;
}

function payloadOf(c: RestCase): string | Buffer | undefined {
  if (c.body.kind === 'none') return undefined;
  if (c.body.kind === 'value') return toJson(c.body.value);
  const built = c.body.build();
  return typeof built === 'string' ? built : Buffer.from(built);
}

function authorization(c: RestCase, target: RestTarget): Record<string, string> {
  if (c.auth.kind === 'token') return { authorization: `Bearer ${target.token}` };
  if (c.auth.kind === 'server') return { authorization: `Bearer ${target.serverToken}` };
  if (c.auth.kind === 'bad') return { authorization: c.auth.value };
  return {};
}

/** A human-readable copy of a case for failure reports; huge parts are shortened. */
export function describeRestCase(c: RestCase): string {
  const body = c.body.kind === 'none' ? '' : ` body ${preview(String(payloadOf(c)))}`;
  return `${c.method} ${preview(c.url, 160)} headers ${JSON.stringify(c.headers).slice(0, 200)} [${c.labels.join(' | ')}]${body}`;
}

/**
 * The assertions every REST answer must pass: no 5xx; an error is problem+json whose `code` is in
 * the catalogue and whose `status` matches, unless the document declares that status an HTML page
 * of the operation (the console's); a clean request is never refused as malformed.
 */
export function checkResponse(
  c: RestCase,
  status: number,
  contentType: string | undefined,
  body: string,
): Outcome {
  if (status < 400) return { bucket: String(status) };
  // The operator console answers its own refusals as pages, where the document says so.
  if (c.method !== 'HEAD' && c.htmlErrors.includes(status) && /^text\/html/.test(contentType ?? '')) {
    return { bucket: `${status} (page)` };
  }
  // A HEAD answer has no body to read the code from; its headers are still checked.
  const problemType = /^application\/problem\+json/.test(contentType ?? '');
  let code: unknown;
  let problem: Record<string, unknown> | undefined;
  if (problemType && c.method !== 'HEAD') {
    try {
      problem = JSON.parse(body) as Record<string, unknown>;
      code = problem.code;
    } catch {
      problem = undefined;
    }
  }
  const what =
    typeof code === 'string'
      ? code
      : c.method === 'HEAD' && problemType
        ? '(HEAD)'
        : `(${contentType ?? 'no content-type'})`;
  const bucket = `${status} ${what}`;
  const failure =
    status >= 500
      ? `answered ${bucket}`
      : !problemType
        ? `error ${status} is ${contentType ?? 'without a content type'}, not application/problem+json: ${preview(body, 120)}`
        : c.method === 'HEAD'
          ? undefined
          : problem === undefined
            ? `error ${status} body is not JSON: ${preview(body, 120)}`
            : !documentedCodes.has(String(code))
              ? `error ${status} has undocumented code ${JSON.stringify(code)}`
              : problem.status !== status
                ? `error ${status} says status ${JSON.stringify(problem.status)} in its body`
                : /\n\s+at |node_modules|\.ts:\d+/.test(String(problem.detail))
                  ? `error ${status} leaks a stack trace: ${preview(String(problem.detail), 120)}`
                  : c.clean && (code === 'MALFORMED_REQUEST' || code === 'UNSUPPORTED_MEDIA_TYPE')
                    ? `a well-formed JSON request was refused with ${bucket}`
                    : undefined;
  return failure === undefined ? { bucket } : { bucket, failure };
}

/** Sends one case through inject (or a raw socket for its share), checks the answer and the server's health. */
export async function sendRestCase(target: RestTarget, c: RestCase): Promise<Outcome> {
  try {
    const send = () => (c.raw === undefined ? viaInject(target, c) : viaSocket(target, c));
    let outcome = await send();
    // A 503 says a dependency was lost (a query timed out on a loaded machine), which no input
    // causes: the case is sent again once the service is ready, and fails only if it repeats.
    if (outcome.bucket === '503 SERVICE_UNAVAILABLE') {
      await untilReady(target);
      const again = await send();
      outcome = again.failure ? again : { bucket: `503 once, then ${again.bucket}` };
    }
    if (outcome.failure) return outcome;
    const health = await target.app.http.inject({ method: 'GET', url: '/healthz' });
    if (health.statusCode !== 200)
      return { ...outcome, failure: `/healthz answered ${health.statusCode} after the case` };
    return outcome;
  } finally {
    if (c.body.kind === 'value') releaseAll(c.body.value);
  }
}

/** Waits (at most 30 s) until /readyz answers 200: the database and the KV answer again. */
async function untilReady(target: RestTarget): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ready = await target.app.http.inject({ method: 'GET', url: '/readyz' });
    if (ready.statusCode === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function viaInject(target: RestTarget, c: RestCase): Promise<Outcome> {
  let response: Awaited<ReturnType<TestApp['http']['inject']>>;
  try {
    response = await target.app.http.inject({
      method: c.method as 'GET',
      url: c.url,
      headers: { ...c.headers, ...authorization(c, target) },
      ...(c.body.kind === 'none' ? {} : { payload: payloadOf(c) }),
    });
  } catch (error) {
    // Headers Node itself refuses to send (a NUL, say) never reach the server: nothing to check.
    if (error instanceof TypeError || (error as { code?: string }).code?.startsWith('ERR_')) {
      return { bucket: 'not sendable' };
    }
    throw error;
  }
  return checkResponse(
    c,
    response.statusCode,
    response.headers['content-type'] as string | undefined,
    response.body,
  );
}

/** Request bytes for the raw share, with the case's byte-level damage applied. */
function rawRequest(c: RestCase, target: RestTarget, payload: Buffer | undefined): Buffer {
  if (c.raw === 'tls-hello') return Buffer.from('160301002f0100002b0303', 'hex');
  let method = c.raw === 'lowercase-method' ? c.method.toLowerCase() : c.method;
  let url = c.raw === 'absolute-url' ? `http://127.0.0.1${c.url}` : c.url;
  if (c.raw === 'huge-url') url += `${url.includes('?') ? '&' : '?'}pad=${'u'.repeat(20_000)}`;
  const eol = c.raw === 'bare-lf' ? '\n' : '\r\n';
  const version = c.raw === 'bad-version' ? 'HTTP/1.7' : 'HTTP/1.1';
  const headers: [string, string][] = [
    ['host', new URL(target.app.httpUrl).host],
    ['connection', 'close'],
    ...Object.entries({ ...c.headers, ...authorization(c, target) }),
  ];
  let body = payload ?? Buffer.alloc(0);
  const length = String(body.byteLength);
  if (payload || c.raw === 'bad-content-length') {
    headers.push(['content-length', c.raw === 'bad-content-length' ? '12abc' : length]);
  }
  if (c.raw === 'conflicting-content-length') headers.push(['content-length', String(body.byteLength + 1)]);
  if (c.raw === 'content-length-and-chunked') headers.push(['transfer-encoding', 'chunked']);
  if (c.raw === 'bad-chunk-size') {
    method = method === 'GET' || method === 'HEAD' ? 'POST' : method;
    headers.push(['transfer-encoding', 'chunked']);
    body = Buffer.concat([Buffer.from(`zz${eol}`), body, Buffer.from(`${eol}0${eol}${eol}`)]);
  }
  if (c.raw === 'huge-header') headers.push(['x-pad', 'p'.repeat(20_000)]);
  if (c.raw === 'many-headers') for (let i = 0; i < 3000; i++) headers.push([`x-h${i}`, String(i)]);
  if (c.raw === 'nul-in-header') headers.push(['x-nul', 'a\u0000b']);
  const head = `${method} ${url} ${version}${eol}${headers.map(([k, v]) => `${k}: ${v}${eol}`).join('')}${eol}`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

function decodeChunked(body: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = Number.parseInt(body.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!size) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Sends raw bytes on a fresh connection and parses the first response, if one comes. */
async function viaSocket(target: RestTarget, c: RestCase): Promise<Outcome> {
  const payload = payloadOf(c);
  const request = rawRequest(c, target, payload === undefined ? undefined : Buffer.from(payload));
  const { port, hostname } = new URL(target.app.httpUrl);
  const received = await new Promise<Buffer | 'timeout'>((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('timeout');
    }, RAW_TIMEOUT_MS);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
  });
  if (received === 'timeout') {
    return c.raw === 'none'
      ? { bucket: 'raw: no answer', failure: `no answer within ${RAW_TIMEOUT_MS} ms over a real connection` }
      : { bucket: 'raw: no answer' };
  }
  const split = received.indexOf('\r\n\r\n');
  if (split < 0)
    return { bucket: received.byteLength ? 'raw: unparseable answer' : 'raw: closed without answer' };
  const head = received.subarray(0, split).toString('latin1').split('\r\n');
  const status = Number(head[0]?.split(' ')[1]);
  const headers = new Map(
    head
      .slice(1)
      .map((line) => [
        line.slice(0, line.indexOf(':')).toLowerCase(),
        line.slice(line.indexOf(':') + 1).trim(),
      ]),
  );
  const rest = received.subarray(split + 4);
  const body = headers.get('transfer-encoding') === 'chunked' ? decodeChunked(rest) : rest.toString('utf8');
  const outcome = checkResponse(c, status, headers.get('content-type'), body);
  return { ...outcome, bucket: `raw ${outcome.bucket}` };
}
