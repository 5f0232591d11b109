import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { App } from '../../src/app.js';
import { PASSWORD } from '../helpers/accounts.js';

/**
 * A browser's part of the console over inject: a cookie jar, forms posted urlencoded with the
 * page's Origin, and the CSRF token read from the last page, as a browser would send them.
 */
export class ConsoleClient {
  readonly cookies = new Map<string, string>();
  csrf = '';

  constructor(
    private readonly app: Pick<App, 'http'>,
    private readonly origin = 'http://localhost:80',
  ) {}

  private remember(response: LightMyRequestResponse): LightMyRequestResponse {
    for (const cookie of setCookies(response)) {
      const [pair = ''] = cookie.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      if (/Max-Age=0/.test(cookie)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(response.body)?.[1];
    if (token) this.csrf = token;
    return response;
  }

  private cookieHeader(): Record<string, string> {
    if (this.cookies.size === 0) return {};
    return { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') };
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    return this.remember(await this.app.http.inject({ method: 'GET', url, headers: this.cookieHeader() }));
  }

  /** Posts a form with the current CSRF token unless `fields` sets `_csrf` itself. */
  async post(
    url: string,
    fields: Record<string, string>,
    headers: Record<string, string> = { origin: this.origin },
  ): Promise<LightMyRequestResponse> {
    return this.remember(
      await this.app.http.inject({
        method: 'POST',
        url,
        headers: { ...this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams({ _csrf: this.csrf, ...fields }).toString(),
      }),
    );
  }

  /** Signs in through the sign-in form; answers the form's answer (303 on success). */
  async signIn(username: string, password = PASSWORD): Promise<LightMyRequestResponse> {
    await this.get('/console/sign-in');
    return this.post('/console/sign-in', { username, password });
  }

  /** Signs in and expects to land in the console. */
  async signedIn(username: string): Promise<this> {
    const response = await this.signIn(username);
    expect(response.statusCode, response.body).toBe(303);
    expect(response.headers.location).toBe('/console');
    await this.get('/console');
    return this;
  }
}

export function setCookies(response: LightMyRequestResponse): string[] {
  const header = response.headers['set-cookie'];
  return header === undefined ? [] : [header].flat().map(String);
}
