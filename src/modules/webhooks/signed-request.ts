/**
 * One delivery attempt: check the URL by the address rules again, then POST the signed body to an
 * address that check judged (docs: the contract's "Delivery" and "Address rules (SSRF)").
 *
 * The check is made here, not by the caller, so no attempt can skip it: a name is resolved once
 * per attempt, and the request connects to the first address of that answer (every one passed)
 * with the URL's host in `Host`, and over https in SNI and the certificate check (`servername`),
 * so nothing resolves the name a second time. A refused or unresolvable address fails the attempt
 * without connecting. Node's http client never follows redirects: a 3xx is a failure like any
 * other status outside 2xx. The timeout bounds the whole attempt, the check included.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { type CheckedTarget, checkUrl, type GuardOptions } from './address-guard.js';
import type { WebhookHeaders } from './signing.js';

/**
 * `error` is null exactly when the attempt delivered (a 2xx). `status` is the answer's status, null
 * when none came back (timeout, connection error, refused address).
 */
export interface AttemptOutcome {
  status: number | null;
  error: string | null;
}

export interface AttemptOptions extends GuardOptions {
  /** WEBHOOK_TIMEOUT_SECONDS in milliseconds: the whole attempt. */
  timeoutMs: number;
  /** Ends the attempt early, as its timeout does (the node is stopping). */
  signal?: AbortSignal;
}

/** The most of an error answer's body, and of any error text, kept for `last_error`. */
const MAX_ERROR_CHARS = 500;

const clip = (text: string) => text.slice(0, MAX_ERROR_CHARS);

/** POSTs `body` (JSON) with `headers` to `url`, as one attempt of a delivery. */
export async function attemptDelivery(
  url: string,
  body: string,
  headers: WebhookHeaders,
  options: AttemptOptions,
): Promise<AttemptOutcome> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const deadline = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
  const timedOut = { status: null, error: `timed out after ${options.timeoutMs} ms` };
  const expired = new Promise<'expired'>((resolve) =>
    deadline.addEventListener('abort', () => resolve('expired'), { once: true }),
  );
  const check = await Promise.race([checkUrl(url, options), expired]);
  if (check === 'expired') return timedOut;
  if (!check.ok) return { status: null, error: clip(`address refused, not connected: url ${check.reason}`) };
  const outcome = await post(check.target, body, headers, deadline);
  return outcome ?? timedOut;
}

/** The outcome, or undefined when `deadline` ended the exchange before any status came back. */
function post(
  target: CheckedTarget,
  body: string,
  headers: WebhookHeaders,
  deadline: AbortSignal,
): Promise<AttemptOutcome | undefined> {
  const { url, addresses } = target;
  const [{ address, family }] = addresses;
  const https = url.protocol === 'https:';
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve) => {
    const req = (https ? httpsRequest : httpRequest)({
      method: 'POST',
      host: address,
      family,
      port: url.port || (https ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      // The name the certificate is checked against (Node would derive it from Host too). SNI
      // carries no IP address: for an IP URL the certificate is checked against the IP.
      ...(https && isIP(hostname) === 0 ? { servername: hostname } : {}),
      headers: {
        ...headers,
        host: url.host,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      },
      // A connection of its own to the address checked for this attempt, closed after it.
      agent: false,
      signal: deadline,
    });
    let answered = false;
    req.on('error', (error) => {
      // Once a status came back, the response's own events settle the outcome.
      if (answered) return;
      resolve(
        deadline.aborted ? undefined : { status: null, error: clip(`request failed: ${error.message}`) },
      );
    });
    req.on('response', (res) => {
      answered = true;
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        // The body is ignored; the deadline still ends a transfer that goes on.
        res.resume();
        resolve({ status, error: null });
        return;
      }
      let text = '';
      const failed = () => resolve({ status, error: clip(text) || `HTTP ${status}` });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (text.length >= MAX_ERROR_CHARS) {
          failed();
          res.destroy();
        }
      });
      res.on('end', failed);
      res.on('close', failed);
      res.on('error', failed);
    });
    req.end(body);
  });
}
