import { appendFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { App } from '../../src/app.js';
import { type Exchange, OpenApiCheck, type OpenApiDocument } from './openapi-check.js';

/**
 * Every HTTP exchange a test app serves, injected or over a socket, is checked against the
 * document the app publishes (test/helpers/openapi-check.ts); `violations()` lists what did not
 * match. Test apps fail their file when closed with violations, so a route that answers something
 * its document does not say fails the suite wherever a test happens to provoke it.
 * OPENAPI_CHECK_REPORT=<file> also appends each violation to that file, one per line.
 */
export interface ExchangeRecorder {
  violations(): string[];
}

/**
 * Checks by the routes the app serves. A route's schemas are protocol/'s declarations, the same
 * for every app of a process, so apps that serve the same routes publish the same document, and
 * building it (about a tenth of a second per app) is done once per set of routes.
 */
const checks = new Map<string, OpenApiCheck>();

export function recordExchanges(app: App): ExchangeRecorder {
  const found = new Set<string>();
  let check: OpenApiCheck | undefined;
  const record = (exchange: Exchange) => {
    if (!check) {
      const routes = app.http.printRoutes({ commonPrefix: false });
      // A copy: the check compiles its schemas, and the app serves its document as it is.
      check =
        checks.get(routes) ??
        new OpenApiCheck(structuredClone(app.http.swagger()) as unknown as OpenApiDocument);
      checks.set(routes, check);
    }
    for (const violation of check.check(exchange)) {
      if (found.has(violation)) continue;
      found.add(violation);
      const report = process.env.OPENAPI_CHECK_REPORT;
      if (report) appendFileSync(report, `${violation}\n`);
    }
  };
  tapInject(app, record);
  app.http.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) =>
    tapServerExchange(req, res, record),
  );
  return { violations: () => [...found] };
}

type InjectOptions = {
  method?: string;
  headers?: Record<string, string | string[] | undefined>;
  payload?: unknown;
  body?: unknown;
};
type InjectResponse = {
  /** The request as the service received it: light-my-request resolves the URL (dot segments, query). */
  raw: { req: { url?: string } };
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  rawPayload: Buffer;
};

/** Wraps `http.inject` (light-my-request calls Fastify's handler directly, past the server). */
function tapInject(app: App, record: (exchange: Exchange) => void): void {
  const http = app.http as unknown as { inject: (options: unknown) => Promise<InjectResponse> };
  const inject = http.inject.bind(http);
  http.inject = (options: unknown) => {
    const answered = inject(options);
    if (options === undefined) return answered;
    const sent = (typeof options === 'string' ? {} : options) as InjectOptions;
    return answered.then((response) => {
      record(injectedExchange(sent, response));
      return response;
    });
  };
}

function injectedExchange(sent: InjectOptions, response: InjectResponse): Exchange {
  const headers: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(sent.headers ?? {})) headers[name.toLowerCase()] = value;
  const payload = sent.payload ?? sent.body;
  let requestBody: Buffer | undefined;
  if (typeof payload === 'string') requestBody = Buffer.from(payload);
  else if (payload instanceof Uint8Array) requestBody = Buffer.from(payload);
  else if (payload !== undefined && payload !== null) {
    requestBody = Buffer.from(JSON.stringify(payload));
    headers['content-type'] ??= 'application/json';
  }
  return {
    method: (sent.method ?? 'GET').toUpperCase(),
    // Not the URL given to inject: `/api/groups/..` reaches the service as `/api/`.
    url: response.raw.req.url ?? '/',
    requestHeaders: headers,
    requestBody,
    status: response.statusCode,
    responseHeaders: response.headers,
    responseBody: response.rawPayload,
  };
}

/** Watches a request arriving over a socket without changing how the service reads or answers it. */
function tapServerExchange(req: IncomingMessage, res: ServerResponse, record: (exchange: Exchange) => void) {
  const received: Buffer[] = [];
  const emit = req.emit.bind(req);
  req.emit = ((event: string, ...args: unknown[]) => {
    if (event === 'data') received.push(Buffer.from(args[0] as Uint8Array));
    return emit(event, ...args);
  }) as typeof req.emit;
  const sent: Buffer[] = [];
  // Fastify hands its headers to writeHead, which sends them without storing them on `res`.
  const headers: Exchange['responseHeaders'] = {};
  const writeHead = res.writeHead.bind(res);
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    const given = rest.find((arg) => typeof arg === 'object' && arg !== null);
    for (const [name, value] of Object.entries(given ?? {})) headers[name.toLowerCase()] = value as string;
    return (writeHead as (...args: unknown[]) => ServerResponse)(status, ...rest);
  }) as typeof res.writeHead;
  const keep = (chunk: unknown) => {
    if (typeof chunk === 'string') sent.push(Buffer.from(chunk));
    else if (chunk instanceof Uint8Array) sent.push(Buffer.from(chunk));
  };
  const write = res.write.bind(res);
  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    keep(chunk);
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof res.write;
  const end = res.end.bind(res);
  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    if (typeof chunk !== 'function') keep(chunk);
    return (end as (...args: unknown[]) => ServerResponse)(chunk, ...rest);
  }) as typeof res.end;
  res.once('finish', () =>
    record({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      requestHeaders: req.headers,
      requestBody: received.length > 0 ? Buffer.concat(received) : undefined,
      status: res.statusCode,
      responseHeaders: { ...(res.getHeaders() as Exchange['responseHeaders']), ...headers },
      // Node sends no body in answer to HEAD, whatever the handler wrote (ServerResponse drops it).
      responseBody: req.method === 'HEAD' ? Buffer.alloc(0) : Buffer.concat(sent),
    }),
  );
}
