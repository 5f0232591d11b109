import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, hasSqlState, SqlState } from '../../platform/db.js';

/**
 * The loadout is an opaque client document, so it goes to the database as one bound jsonb
 * parameter. Handing it to the ORM as entity data made MikroORM walk its keys as if they were
 * query parameters (a key named `constructor` crashed that walk); as a parameter every key is
 * plain data.
 */

export async function findLoadoutDocument(
  data: DataAccess,
  userId: string,
): Promise<Record<string, unknown> | undefined> {
  const [row] = await executeBound<{ document: Record<string, unknown> }>(
    data,
    'select document from avatar_loadouts where user_id = $1',
    [userId],
  );
  return row?.document;
}

/** Inserts or replaces the user's document in one statement, so concurrent first saves both succeed. */
export async function saveLoadoutDocument(
  data: DataAccess,
  userId: string,
  document: Record<string, unknown>,
  now: Date,
): Promise<Record<string, unknown>> {
  const [row] = await executeBound<{ document: Record<string, unknown> }>(
    data,
    `insert into avatar_loadouts (user_id, document, updated_at) values ($1, $2::jsonb, $3)
     on conflict (user_id) do update set document = excluded.document, updated_at = excluded.updated_at
     returning document`,
    [userId, JSON.stringify(document), now],
  );
  return row?.document ?? document;
}

/** Postgres' SQLSTATE for a foreign key violation: the row's user does not exist (any more). */
export function isMissingUser(error: unknown): boolean {
  return hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION);
}
