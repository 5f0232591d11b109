import type { Role } from '../../platform/auth/access-tokens.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed, hasSqlState, SqlState } from '../../platform/db.js';
import { toUuidArray } from '../../platform/ids.js';
import { namedSql } from '../../platform/named-sql.js';

/** Every statement on the users table, on the lean path (executeBound): fixed texts, plain rows. */

/** An account as the services read it: every column, named as a property. */
export interface User {
  id: string;
  username: string;
  email: string | null;
  passwordHash: string;
  roles: Role[];
  lastSeenAt: Date | null;
  statusMessage: string | null;
  termsAcceptedAt: Date;
  adultConfirmedAt: Date;
  createdAt: Date;
  updatedAt: Date;
  /** A suspension, when one was set and not lifted: in force while `suspendedUntil` is null or later than now. */
  suspendedAt?: Date | null;
  suspendedUntil?: Date | null;
  suspensionReason?: string | null;
  suspendedBy?: string | null;
}

/** The caller's own account as GET /api/users/me shows it. */
export interface AccountRow {
  id: string;
  username: string;
  created_at: Date;
  last_seen_at: Date | null;
  status_message: string | null;
  roles: Role[];
}

/** The columns of an AccountRow; roles is a user_role[], and drivers parse only arrays of built-in types. */
const SELECT_ACCOUNT =
  'select id, username, created_at, last_seen_at, status_message, roles::text[] as roles from users';
// Built once: each text is a prepared statement's key, looked up on every GET /api/users/me.
const FIND_ACCOUNT_SQL = `${SELECT_ACCOUNT} where id = $1`;
const FIND_ACCOUNTS_SQL = `${SELECT_ACCOUNT} where id = any($1::uuid[])`;

export async function findAccount(data: DataAccess, userId: string): Promise<AccountRow | undefined> {
  const [row] = await executeBound<AccountRow>(data, FIND_ACCOUNT_SQL, [userId]);
  return row;
}

/** findAccount for several users (canonical ids) in one statement, answering for each in order. */
export async function findAccounts(
  data: DataAccess,
  userIds: readonly string[],
): Promise<(AccountRow | undefined)[]> {
  if (userIds.length === 1) return [await findAccount(data, userIds[0] as string)];
  const rows = await executeBound<AccountRow>(data, FIND_ACCOUNTS_SQL, [userIds]);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return userIds.map((id) => byId.get(id));
}

/** Those of the ids that name an account, with their usernames. */
export function usernamesOf(
  data: DataAccess,
  userIds: readonly string[],
): Promise<{ id: string; username: string }[]> {
  return executeBound(data, 'select id, username from users where id = any($1::uuid[])', [userIds]);
}

/**
 * Locks the user's row until the transaction ends, so that another module's writes for one user
 * take turns (favorites replaces: two at once would merge their sets); false when the account is
 * gone. NO KEY UPDATE leaves inserts that reference the user (which take KEY SHARE) unblocked.
 */
export async function lockAccount(data: DataAccess, userId: string): Promise<boolean> {
  const rows = await executeBound(data, 'select 1 from users where id = $1 for no key update', [userId]);
  return rows.length > 0;
}

/** Which of these ids (canonical UUIDs) name an account. */
export async function existingUserIds(data: DataAccess, userIds: readonly string[]): Promise<string[]> {
  const rows = await executeBound<{ id: string }>(data, 'select id from users where id = any($1::uuid[])', [
    userIds,
  ]);
  return rows.map((row) => row.id);
}

/**
 * A page of account ids in id order after `afterId` (null: from the first), of the accounts
 * created at or before `createdBy`: what a job that visits every account once walks.
 */
export async function accountIdsAfter(
  data: DataAccess,
  afterId: string | null,
  createdBy: Date,
  limit: number,
): Promise<string[]> {
  const rows = await executeBound<{ id: string }>(
    data,
    'select id from users where ($1::uuid is null or id > $1) and created_at <= $2 order by id limit $3',
    [afterId, createdBy, limit],
  );
  return rows.map((row) => row.id);
}

/**
 * SQL that is true when the account `idSql` names (a parameter or column of a uuid) exists: for
 * statements of other modules that must tell an unknown user from an empty answer in the same
 * round trip.
 */
export const userExistsSql = (idSql: string) => `exists (select 1 from users where id = ${idSql})`;

/**
 * SQL whose value is the username of the account `idSql` names (null when there is none): for
 * other modules' lists of users (a group's roster) to carry names in the same statement.
 */
export const usernameSql = (idSql: string) => `(select username from users where id = ${idSql})`;

/** The stored status message; undefined when the account does not exist. */
export async function storedStatusMessage(
  data: DataAccess,
  userId: string,
): Promise<string | null | undefined> {
  const [row] = await executeBound<{ status_message: string | null }>(
    data,
    'select status_message from users where id = $1',
    [userId],
  );
  return row?.status_message;
}

/** Writes several users' status messages in one statement, each with the time it was set. */
export async function writeStatusMessages(
  data: DataAccess,
  batch: readonly { userId: string; message: string | null; at: Date }[],
): Promise<void> {
  await executeBound(
    data,
    `update users u set status_message = v.message, updated_at = v.at
     from unnest($1::uuid[], $2::text[], $3::timestamptz[]) as v(id, message, at) where u.id = v.id`,
    [batch.map((b) => b.userId), batch.map((b) => b.message), batch.map((b) => b.at)],
  );
}

/**
 * Writes coalesced last_seen_at sightings (user id, time) in one statement; a newer value already
 * stored is kept, so sightings written late or twice never move it back.
 */
export async function writeLastSeen(
  data: DataAccess,
  sightings: readonly (readonly [userId: string, at: Date])[],
): Promise<void> {
  const ids = toUuidArray(sightings.map(([id]) => id));
  const times = `{${sightings.map(([, at]) => at.toISOString()).join(',')}}`;
  await executeBound(
    data,
    `update users u set last_seen_at = greatest(coalesce(u.last_seen_at, v.seen), v.seen)
     from unnest($1::uuid[], $2::timestamptz[]) as v(id, seen) where u.id = v.id`,
    [ids, times],
  );
}

/** The columns of a User, named as its properties. */
const USER_COLUMNS = `id, username, email, password_hash as "passwordHash", roles::text[] as roles,
  last_seen_at as "lastSeenAt", status_message as "statusMessage", terms_accepted_at as "termsAcceptedAt",
  adult_confirmed_at as "adultConfirmedAt", created_at as "createdAt", updated_at as "updatedAt",
  suspended_at as "suspendedAt", suspended_until as "suspendedUntil", suspension_reason as "suspensionReason",
  suspended_by as "suspendedBy"`;
const FIND_USER_BY_ID_SQL = `select ${USER_COLUMNS} from users where id = $1`;
// lower(username) is what the unique index holds: usernames are unique case-insensitively.
const FIND_USER_BY_USERNAME_SQL = `select ${USER_COLUMNS} from users where lower(username) = $1`;

/** What another user may see of an account. */
export async function findPublicUser(
  data: DataAccess,
  userId: string,
): Promise<Pick<User, 'id' | 'username' | 'createdAt'> | undefined> {
  const [row] = await executeBound<Pick<User, 'id' | 'username' | 'createdAt'>>(
    data,
    'select id, username, created_at as "createdAt" from users where id = $1',
    [userId],
  );
  return row;
}

const INSERT_USER = namedSql<Omit<User, 'roles'> & { roles: string }>(
  `insert into users (id, username, email, password_hash, roles, last_seen_at, status_message,
                      terms_accepted_at, adult_confirmed_at, created_at, updated_at)
   values (:id, :username, :email, :passwordHash, :roles::user_role[], :lastSeenAt, :statusMessage,
           :termsAcceptedAt, :adultConfirmedAt, :createdAt, :updatedAt)`,
);

/**
 * Writes a new account (registration). When a unique index refuses it, answers the index's name
 * (or the error's message, where the driver names none): the caller tells a taken username from a
 * taken email by it, and of two concurrent registrations of one name exactly one insert succeeds.
 */
export async function createUser(
  data: DataAccess,
  account: User,
): Promise<{ uniqueViolated: string } | undefined> {
  try {
    await executeNamed(data, INSERT_USER, { ...account, roles: `{${account.roles.join(',')}}` });
    return undefined;
  } catch (error) {
    if (!hasSqlState(error, SqlState.UNIQUE_VIOLATION)) throw error;
    return { uniqueViolated: (error as { constraint?: string }).constraint ?? (error as Error).message };
  }
}

export async function findUserById(data: DataAccess, userId: string): Promise<User | null> {
  const [row] = await executeBound<User>(data, FIND_USER_BY_ID_SQL, [userId]);
  return row ?? null;
}

/** The account whose username matches case-insensitively, as the unique index on lower(username) does. */
export async function findUserByUsername(data: DataAccess, username: string): Promise<User | null> {
  const [row] = await executeBound<User>(data, FIND_USER_BY_USERNAME_SQL, [username.toLowerCase()]);
  return row ?? null;
}

/**
 * Deletes the account; the rows of every module that reference it follow their ON DELETE rules.
 * Answers whether this call deleted it (of two racing deletions, one does).
 */
export async function deleteUser(data: DataAccess, userId: string): Promise<boolean> {
  const rows = await executeBound(data, 'delete from users where id = $1 returning id', [userId]);
  return rows.length > 0;
}

/**
 * The account by id or username (case-insensitively), its row locked until the transaction of
 * `data` ends: role changes and suspensions read, change and audit it without a lost update.
 */
export async function lockUser(
  data: DataAccess,
  by: { id: string } | { username: string },
): Promise<User | null> {
  const [row] = await executeBound<User>(
    data,
    'id' in by ? `${FIND_USER_BY_ID_SQL} for update` : `${FIND_USER_BY_USERNAME_SQL} for update`,
    ['id' in by ? by.id : by.username.toLowerCase()],
  );
  return row ?? null;
}

/** The account's suspension columns as they are committed now (login's late check); undefined when it is gone. */
export async function suspensionOf(
  data: DataAccess,
  userId: string,
): Promise<Pick<User, 'suspendedAt' | 'suspendedUntil' | 'suspensionReason' | 'suspendedBy'> | undefined> {
  const [row] = await executeBound<{
    suspendedAt: Date | null;
    suspendedUntil: Date | null;
    suspensionReason: string | null;
    suspendedBy: string | null;
  }>(
    data,
    `select suspended_at as "suspendedAt", suspended_until as "suspendedUntil",
            suspension_reason as "suspensionReason", suspended_by as "suspendedBy"
     from users where id = $1`,
    [userId],
  );
  return row;
}

/** Stores the account's roles (operator tooling), on the row and on `user`. */
export async function writeRoles(data: DataAccess, user: User, roles: Role[], at: Date): Promise<void> {
  await executeBound(data, 'update users set roles = $2::user_role[], updated_at = $3 where id = $1', [
    user.id,
    `{${roles.join(',')}}`,
    at,
  ]);
  user.roles = roles;
  user.updatedAt = at;
}

/** Sets (or with null clears) the suspension of the account, on the row and on `user`. */
export async function writeSuspension(
  data: DataAccess,
  user: User,
  suspension: { since: Date; until: Date | null; reason: string; by: string | null } | null,
): Promise<void> {
  const columns = {
    suspendedAt: suspension?.since ?? null,
    suspendedUntil: suspension?.until ?? null,
    suspensionReason: suspension?.reason ?? null,
    suspendedBy: suspension?.by ?? null,
  };
  await executeBound(
    data,
    `update users set suspended_at = $2, suspended_until = $3, suspension_reason = $4, suspended_by = $5
     where id = $1`,
    [user.id, columns.suspendedAt, columns.suspendedUntil, columns.suspensionReason, columns.suspendedBy],
  );
  Object.assign(user, columns);
}
