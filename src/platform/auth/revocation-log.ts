import type { DataAccess } from '../data-access.js';
import { executeBound } from '../db.js';
import { toUuidArray } from '../ids.js';
import type { RevocationLog } from './access-tokens.js';

/**
 * The durable side of session revocation (see migration 0003): AccessTokens records every
 * revocation here before it marks the KV store, and rebuilds the marks from here when the store
 * has lost them. Rows older than the `forgetBefore` AccessTokens passes can no longer matter, since
 * every access token they could stop has expired; each recording prunes them.
 */
export function revocationLog(data: DataAccess): RevocationLog {
  return {
    async record(sessionIds, at, forgetBefore) {
      await executeBound(
        data,
        `with pruned as (delete from session_revocations where revoked_at < $1)
         insert into session_revocations (session_id, revoked_at)
         select id, $2::timestamptz from unnest($3::uuid[]) as ids(id)
         on conflict (session_id) do nothing`,
        [forgetBefore, at, toUuidArray(sessionIds)],
      );
    },
    async since(at) {
      const rows = await executeBound<{ session_id: string }>(
        data,
        'select session_id from session_revocations where revoked_at >= $1',
        [at],
      );
      return rows.map((row) => row.session_id);
    },
  };
}
