import autocannon from 'autocannon';
import { cpuWindow } from './process-stats.js';
import type { Contender, WindowFigures } from './rounds.js';

/** REST req/s with autocannon in this process. */

export const REST_CONNECTIONS = 50;

export interface RestWindow extends WindowFigures {
  p50Ms: number;
  p99Ms: number;
  /** Connection errors and timeouts. */
  errors: number;
  non2xx: number;
}

/** The request each connection repeats; a POST without a body unless told otherwise. */
export interface RestRequest {
  method?: 'GET' | 'POST' | 'PUT';
  body?: string;
  /** Varies each request (its path, its headers): autocannon calls it before every request. */
  setup?: (request: autocannon.Request) => autocannon.Request;
  /**
   * Instead of `setup`: requests each connection sends in turn, over and over; their `context` is
   * the connection's own and starts afresh with each turn of the sequence.
   */
  sequence?: autocannon.Request[];
}

/** REST_CONNECTIONS connections sending `request` to `url`, one autocannon run per window. */
export function restContender(
  name: string,
  url: string,
  serverPid: number,
  headers: Record<string, string> = {},
  { method = 'POST', body, setup, sequence }: RestRequest = {},
): Contender<RestWindow> {
  return {
    name,
    async window(seconds) {
      const cpu = await cpuWindow(serverPid);
      const result = await autocannon({
        url,
        method,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body }),
        ...(setup ? { requests: [{ setupRequest: setup }] } : {}),
        ...(sequence ? { requests: sequence } : {}),
        connections: REST_CONNECTIONS,
        duration: seconds,
      });
      const used = await cpu();
      return {
        // Over the run's own duration: autocannon ends on its once-a-second sample tick, which can
        // come a little after the duration asked for.
        perSecond: result.requests.total / result.duration,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        errors: result.errors + result.timeouts,
        non2xx: result.non2xx,
        ...used,
      };
    },
  };
}

/** One request by hand first: the REST figure only means something if the answer is a 200. */
export async function checkRestHeartbeat(httpPort: number, token: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${httpPort}/api/presence/heartbeat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  const body = await response.text();
  if (response.status !== 200)
    throw new Error(`POST /api/presence/heartbeat answered ${response.status}: ${body}`);
  return body;
}
