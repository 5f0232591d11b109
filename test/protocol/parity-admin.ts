import type { TokenResponse } from '../../protocol/auth.js';
import { registerWithRole } from '../helpers/accounts.js';
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
  return {
    'admin.audit.list': {
      prepare: async ({ me }) => ({
        token: (await anAdmin()).access_token,
        input: { target: me.user.id, limit: 10 },
      }),
    },
  };
}
