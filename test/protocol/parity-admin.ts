import { expect } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import type { RestName, Row } from './parity-types.js';

/** The administration rows of the parity table (`/api/admin/...`), run as one admin. */

type AdminName = Extract<RestName, `admin.${string}`>;

export function adminRows(appOf: () => TestApp): { [N in AdminName]: Row<N> } {
  let admin: Promise<TokenResponse> | undefined;
  const anAdmin = () => {
    admin ??= registerWithRole(appOf(), 'admin');
    return admin;
  };
  const fresh = async () => (await registerUser(appOf())).user.id;
  return {
    'admin.users.list': {
      prepare: async ({ other }) => ({
        token: (await anAdmin()).access_token,
        input: { query: other.user.username.toUpperCase(), limit: 5 },
      }),
    },
    'admin.users.get': {
      prepare: async ({ other }) => ({
        token: (await anAdmin()).access_token,
        input: { user_id: other.user.id },
      }),
    },
    'admin.users.suspend': {
      fresh: true,
      prepare: async () => ({
        token: (await anAdmin()).access_token,
        input: {
          user_id: await fresh(),
          reason: ' parity ',
          until: new Date(Date.now() + 30 * 86_400_000).toISOString(),
        },
      }),
    },
    'admin.users.unsuspend': {
      fresh: true,
      prepare: async () => {
        const token = (await anAdmin()).access_token;
        const user_id = await fresh();
        const suspended = await appOf().http.inject({
          method: 'POST',
          url: `/api/admin/users/${user_id}/suspension`,
          headers: bearer(token),
          payload: { reason: 'parity' },
        });
        expect(suspended.statusCode, suspended.body).toBe(200);
        return { token, input: { user_id } };
      },
    },
    'admin.users.roles.grant': {
      fresh: true,
      prepare: async () => ({
        token: (await anAdmin()).access_token,
        input: { user_id: await fresh(), role: 'moderator' },
      }),
    },
    'admin.users.roles.revoke': {
      fresh: true,
      prepare: async () => ({
        token: (await anAdmin()).access_token,
        input: { user_id: (await registerWithRole(appOf(), 'moderator')).user.id, role: 'moderator' },
      }),
    },
    'admin.users.sessions.revoke': {
      fresh: true,
      prepare: async () => ({ token: (await anAdmin()).access_token, input: { user_id: await fresh() } }),
    },
    'admin.audit.list': {
      prepare: async ({ me }) => ({
        token: (await anAdmin()).access_token,
        input: { target: me.user.id, limit: 10 },
      }),
    },
  };
}
