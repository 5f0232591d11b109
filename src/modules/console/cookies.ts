/**
 * The few cookies the console sets, read and written without a library: names are fixed ASCII
 * tokens and values base64url, so neither ever needs quoting or decoding.
 */

/** The cookies of a request, by name; the first of a repeated name wins, as browsers send the most specific first. */
export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (!header) return cookies;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at < 0) continue;
    const name = pair.slice(0, at).trim();
    if (name && !cookies.has(name)) cookies.set(name, pair.slice(at + 1).trim());
  }
  return cookies;
}

export interface CookieOptions {
  /** Seconds; 0 deletes the cookie. */
  maxAgeSeconds: number;
  /** Sent only over HTTPS: set when the console is served over TLS (directly or behind a trusted proxy). */
  secure: boolean;
}

/** A Set-Cookie value scoped to the console: HttpOnly, SameSite=Strict, Path=/console. */
export function consoleCookie(name: string, value: string, options: CookieOptions): string {
  return [
    `${name}=${value}`,
    'Path=/console',
    `Max-Age=${options.maxAgeSeconds}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}
