import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';
import { changeRole } from '../../src/modules/users/index.js';
import type { Role } from '../../src/platform/auth/access-tokens.js';

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

/**
 * Signs in through the real endpoint and returns the answer as it is (tests of refusals read it),
 * from `remoteAddress` (light-my-request's 127.0.0.1 otherwise), behind a proxy that says `forwardedFor`.
 */
export function login(
  app: Pick<App, 'http'>,
  username: string,
  password = PASSWORD,
  from: { remoteAddress?: string; forwardedFor?: string } = {},
): Promise<LightMyRequestResponse> {
  return app.http.inject({
    method: 'POST',
    url: '/api/auth/login',
    ...(from.remoteAddress === undefined ? {} : { remoteAddress: from.remoteAddress }),
    headers: from.forwardedFor === undefined ? {} : { 'x-forwarded-for': from.forwardedFor },
    payload: { username, password },
  });
}

/** The signed-in user's own account (GET /api/users/me). */
export function getMe(app: Pick<App, 'http'>, token: string): Promise<LightMyRequestResponse> {
  return app.http.inject({ method: 'GET', url: '/api/users/me', headers: bearer(token) });
}

/** A presence heartbeat over REST. */
export function heartbeat(app: Pick<App, 'http'>, token: string): Promise<LightMyRequestResponse> {
  return app.http.inject({ method: 'POST', url: '/api/presence/heartbeat', headers: bearer(token) });
}

/** REST calls made as a signed-in user, for the app of a test file. */
export function callsAs(app: () => Pick<App, 'http'>) {
  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    user: TokenResponse,
    payload?: object,
  ): Promise<LightMyRequestResponse> =>
    app().http.inject({
      method,
      url,
      headers: bearer(user.access_token),
      ...(payload === undefined ? {} : { payload }),
    });

  /** A call that must answer `status`. */
  const expectStatus = async (
    status: number,
    ...args: Parameters<typeof call>
  ): Promise<LightMyRequestResponse> => {
    const response = await call(...args);
    expect(response.statusCode, `${args[0]} ${args[1]}: ${response.body}`).toBe(status);
    return response;
  };

  return { call, expectStatus };
}

/**
 * Registers a user holding `role` besides `user`, granted as operators do (`atrium admin grant`),
 * and signs in again: a token carries the roles its account had when it was issued.
 */
export async function registerWithRole(app: App, role: Role): Promise<TokenResponse> {
  const { user } = await registerUser(app);
  await changeRole(app.db.data, user.username, role, 'grant');
  const response = await login(app, user.username);
  if (response.statusCode !== 200) throw new Error(`login failed: ${response.statusCode} ${response.body}`);
  return response.json() as TokenResponse;
}
