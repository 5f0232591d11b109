import createClient from 'openapi-fetch';
import type { paths } from './openapi.js';

/**
 * The generated path, for TypeScript clients that want no runtime beyond fetch: openapi-fetch
 * typed by the openapi-typescript types of the API document. The compiler checks paths, path
 * parameters, bodies and answers; errors come back as the document's problem+json.
 */

/** Registers an account, logs in again and reads the account back by id. */
export async function registerLogInAndLookUp(baseUrl: string, username: string, password: string) {
  const api = createClient<paths>({ baseUrl });

  const registered = await api.POST('/api/auth/register', {
    body: { username, password, accept_terms: true, confirm_18_plus: true },
  });
  if (registered.error) throw new Error(`register: ${registered.error.code}: ${registered.error.detail}`);

  const login = await api.POST('/api/auth/login', { body: { username, password } });
  if (login.error) throw new Error(`login: ${login.error.code}: ${login.error.detail}`);

  const user = await api.GET('/api/users/{user_id}', {
    params: { path: { user_id: registered.data.user.id } },
    headers: { authorization: `Bearer ${login.data.access_token}` },
  });
  if (user.error) throw new Error(`users.get: ${user.error.code}: ${user.error.detail}`);
  return user.data;
}
