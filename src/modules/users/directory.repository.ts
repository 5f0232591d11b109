import type { Role } from '../../platform/auth/access-tokens.js';
import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';

/** The accounts as the operator console looks them up (docs/admin.md): lean reads, never the password hash. */

export interface DirectoryRow {
  id: string;
  username: string;
  created_at: Date;
  last_seen_at: Date | null;
  roles: Role[];
  suspended_at: Date | null;
  suspended_until: Date | null;
  suspension_reason: string | null;
  suspended_by: string | null;
  /** The row's keyset position: created_at to the microsecond. */
  created_key: string;
}

const COLUMNS = `id, username, created_at, last_seen_at, roles::text[] as roles, suspended_at, suspended_until,
  suspension_reason, suspended_by, ${timeKeySql('created_at')} as created_key`;

export async function directoryEntry(data: DataAccess, userId: string): Promise<DirectoryRow | undefined> {
  const [row] = await executeBound<DirectoryRow>(data, `select ${COLUMNS} from users where id = $1`, [
    userId,
  ]);
  return row;
}

/** LIKE's wildcards in a search text, escaped so that they match themselves. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * A page of accounts, newest first: all of them, or those whose username contains `search`
 * (case-insensitively), or the one whose id it is. $1 is the limit, $2 and $3 the key.
 */
export function directoryPage(
  data: DataAccess,
  search: { username: string } | { id: string } | undefined,
  page: { after: readonly [string, string] | undefined; limit: number },
): Promise<DirectoryRow[]> {
  const params: unknown[] = [page.limit, ...timeIdKeyParams(page.after)];
  let condition = '';
  if (search && 'id' in search) {
    params.push(search.id);
    condition = 'and id = $4::uuid';
  } else if (search) {
    params.push(`%${likeLiteral(search.username.toLowerCase())}%`);
    condition = `and lower(username) like $4 escape '\\'`;
  }
  return executeBound<DirectoryRow>(
    data,
    `select ${COLUMNS} from users
     where ${beforeTimeIdKey('created_at', 'id')} ${condition}
     order by created_at desc, id desc
     limit $1`,
    params,
  );
}
