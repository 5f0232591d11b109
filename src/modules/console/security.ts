import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The console's browser-facing defences: response headers (a Content-Security-Policy without
 * inline script or style, no framing, no sniffing, nothing cached) and the origin check of a
 * state-changing request, which a CSRF token then completes (console.routes.ts).
 */

/** Scripts, styles and images from the console's own files only; forms post back to it only. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export function setSecurityHeaders(reply: FastifyReply, cache: 'no-store' | 'no-cache'): void {
  reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('x-frame-options', 'DENY');
  reply.header('referrer-policy', 'same-origin');
  reply.header('cross-origin-opener-policy', 'same-origin');
  reply.header('cache-control', cache);
}

/**
 * Whether the request was sent over TLS: directly, or through a proxy TRUST_PROXY trusts to say so
 * (Fastify reads X-Forwarded-Proto only from such a proxy). Cookies are then marked Secure.
 */
export function overTls(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}

/**
 * Whether a state-changing request comes from a page of this console. Browsers send Origin with
 * every form POST (and Sec-Fetch-Site where they support it); a request naming another origin,
 * or declaring itself cross-site, is refused. A request with neither header (not a browser, or
 * one that strips them) still needs the session's CSRF token, which only the console's pages hold.
 */
export function sameOrigin(request: FastifyRequest): boolean {
  if (request.headers['sec-fetch-site'] === 'cross-site') return false;
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  return origin === `${request.protocol}://${request.host}`;
}

/** A urlencoded form body as fields (first value of each name), on an object without a prototype. */
export function parseForm(body: string): Record<string, string> {
  const fields: Record<string, string> = Object.create(null);
  for (const [name, value] of new URLSearchParams(body)) {
    if (!(name in fields)) fields[name] = value;
  }
  return fields;
}
