import { randomBytes } from 'node:crypto';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';

export const PASSWORD = 'correct horse battery';

/** A username no other test in the run will pick. */
export function uniqueUsername(prefix = 'u'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** Registers through the real endpoint and returns the token response. */
export async function registerUser(
  app: App,
  username = uniqueUsername(),
  password = PASSWORD,
): Promise<TokenResponse> {
  const response = await app.http.inject({
    method: 'POST',
    url: '/api/auth/register',
    payload: { username, password, accept_terms: true, confirm_18_plus: true },
  });
  if (response.statusCode !== 201)
    throw new Error(`register failed: ${response.statusCode} ${response.body}`);
  return response.json() as TokenResponse;
}

export function bearer(token: string) {
  return { authorization: `Bearer ${token}` };
}
