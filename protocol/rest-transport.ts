import { rpcCall } from './extensions.js';
import {
  type HttpMethod,
  IDEMPOTENCY_KEY_FIELD,
  type Operation,
  type PlainRestTwin,
  pathParams,
  type RestBinding,
} from './operation.js';
import { pathOf } from './rest-path.js';
import { AtriumError } from './socket.js';

/** The part of fetch the client uses, so that protocol/ needs no DOM types. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
) => Promise<{ status: number; headers: { get(name: string): string | null }; json(): Promise<unknown> }>;

/** The rpcs' one REST path, as protocol/extensions.ts declares it. */
const RPC_ROUTE = rpcCall.restRoute as PlainRestTwin;

/**
 * AtriumClient's REST side: an operation's REST twin called with the same input and answered
 * with the same result or AtriumError codes as its frame would be.
 */
export class RestTransport {
  private readonly calls = new Set<AbortController>();

  constructor(
    private readonly httpUrl: string,
    private readonly fetch: FetchLike,
    private readonly timeoutMs: number,
  ) {}

  async call(op: Operation, rest: RestBinding, input: unknown, token: string | null): Promise<unknown> {
    const request = { method: rest.method, ...restRequest(this.httpUrl, rest, input) };
    return this.send(op.name, request, op.public ? null : token);
  }

  /**
   * The `rpc` frame's REST twin: POST /api/rpc/<name> (the name one segment whatever it holds)
   * with the input as the JSON body, none when it is undefined; resolves with the `{result}` answer.
   */
  async rpc({ name, input }: { name: string; input?: unknown }, token: string | null): Promise<unknown> {
    const url = `${this.httpUrl}${pathOf({ name: rpcCall.name, rest: RPC_ROUTE }, { name })}`;
    const body = input === undefined ? {} : { body: JSON.stringify(input) };
    const answer = await this.send(`rpc ${name}`, { method: RPC_ROUTE.method, url, ...body }, token);
    if (isRecord(answer) && 'result' in answer) return answer;
    throw new AtriumError('BAD_RESPONSE', `The API answered rpc ${name} without a result.`);
  }

  /** Sends one request; resolves with its JSON answer, rejects with the AtriumError it amounts to. */
  private async send(what: string, request: RestRequest, token: string | null): Promise<unknown> {
    const { method, url, body, idempotencyKey } = request;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const controller = new AbortController();
    const timeout = new AtriumError('TIMEOUT', `No answer to ${what} within ${this.timeoutMs} ms.`);
    const timer = setTimeout(() => controller.abort(timeout), this.timeoutMs);
    this.calls.add(controller);
    try {
      const fetch = this.fetch;
      const response = await fetch(url, { method, headers, body, signal: controller.signal });
      // JSON never parses to undefined: undefined marks a body that is not JSON.
      const answer = response.status === 204 ? null : await response.json().catch(() => undefined);
      if (response.status >= 200 && response.status < 300 && answer !== undefined) return answer;
      throw problemError(response.status, response.headers.get('retry-after'), answer);
    } catch (error) {
      if (controller.signal.aborted) throw controller.signal.reason;
      if (error instanceof AtriumError) throw error;
      throw new AtriumError('CONNECT_FAILED', `${method} ${url} failed: ${String(error)}`);
    } finally {
      clearTimeout(timer);
      this.calls.delete(controller);
    }
  }

  /** Fails every call still waiting with `reason`. */
  abortAll(reason: AtriumError): void {
    for (const call of this.calls) call.abort(reason);
  }
}

interface RestRequest {
  method: HttpMethod;
  url: string;
  body?: string;
  idempotencyKey?: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The URL and JSON body of an operation's REST twin: path fields go into the path, the others
 * into the body (GET: the query string). Without path fields the input is the body as it is, so
 * a user document keeps every key. An operation's idempotency key goes in its header.
 */
function restRequest(httpUrl: string, rest: RestBinding, input: unknown): Omit<RestRequest, 'method'> {
  const params = pathParams(rest.path);
  let record = isRecord(input) ? input : {};
  let idempotencyKey: string | undefined;
  if (rest.idempotencyKey) {
    const { [IDEMPOTENCY_KEY_FIELD]: key, ...others } = record;
    record = others;
    if (typeof key === 'string') idempotencyKey = key;
  }
  const keyed = idempotencyKey === undefined ? {} : { idempotencyKey };
  // A path field the input lacks goes as an empty segment, which the server refuses as it refuses
  // an unknown id.
  const path = pathOf({ rest }, Object.fromEntries(params.map((name) => [name, String(record[name] ?? '')])));
  const fields = Object.fromEntries(Object.entries(record).filter(([key]) => !params.includes(key)));
  if (rest.method === 'GET') {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(fields)) {
      for (const item of [value].flat()) if (item !== undefined) query.append(key, `${item}`);
    }
    const search = query.toString();
    return { url: `${httpUrl}${path}${search ? `?${search}` : ''}`, ...keyed };
  }
  const whole = rest.idempotencyKey ? record : input;
  const body = params.length === 0 ? whole : Object.keys(fields).length > 0 ? fields : undefined;
  return {
    url: `${httpUrl}${path}`,
    ...keyed,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  };
}

/** A problem+json answer as the AtriumError the socket's error frame would give. */
function problemError(status: number, retryAfter: string | null, answer: unknown): AtriumError {
  const problem = isRecord(answer) ? answer : {};
  const extra = {
    ...(Array.isArray(problem.errors) ? { errors: problem.errors as AtriumError['errors'] } : {}),
    ...(retryAfter !== null && /^\d+$/.test(retryAfter) ? { retryAfter: Number(retryAfter) } : {}),
  };
  if (typeof problem.code !== 'string') {
    // Not from the API (a proxy's error page, say): a client code, as the server never sends it.
    const expected = status < 300 ? 'a JSON body' : 'problem details';
    return new AtriumError('BAD_RESPONSE', `The API answered HTTP ${status} without ${expected}.`, extra);
  }
  const detail = typeof problem.detail === 'string' ? problem.detail : `HTTP ${status}`;
  return new AtriumError(problem.code, detail, extra);
}
