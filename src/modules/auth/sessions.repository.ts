import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

/**
 * Sessions and refresh tokens. A session is one login; its refresh tokens form a family, of which
 * only the newest has not been rotated. Tokens are stored as their SHA-256 only.
 */

/** A refresh token as its rotation reads it. */
export interface RefreshTokenRow {
  sessionId: string;
  expiresAt: Date;
  rotatedAt: Date | null;
}

/** A session as a refresh reads it. */
export interface SessionLock {
  id: string;
  userId: string;
  expiresAt: Date;
  revokedAt: Date | null;
}

/** The refresh token of this hash, its row locked until the transaction of `data` ends. */
export async function lockRefreshToken(
  data: DataAccess,
  tokenHash: Buffer,
): Promise<RefreshTokenRow | undefined> {
  const [row] = await executeBound<RefreshTokenRow>(
    data,
    `select session_id as "sessionId", expires_at as "expiresAt", rotated_at as "rotatedAt"
     from refresh_tokens where token_hash = $1 for update`,
    [tokenHash],
  );
  return row;
}

/** The session, its row locked until the transaction of `data` ends (after its token's: one order). */
export async function lockSession(data: DataAccess, sessionId: string): Promise<SessionLock | undefined> {
  const [row] = await executeBound<SessionLock>(
    data,
    `select id, user_id as "userId", expires_at as "expiresAt", revoked_at as "revokedAt"
     from sessions where id = $1 for update`,
    [sessionId],
  );
  return row;
}

/** The session the refresh token of this hash belongs to, if the token is known. */
export async function sessionOfRefreshToken(
  data: DataAccess,
  tokenHash: Buffer,
): Promise<string | undefined> {
  const [row] = await executeBound<{ session_id: string }>(
    data,
    'select session_id from refresh_tokens where token_hash = $1',
    [tokenHash],
  );
  return row?.session_id;
}

/** Revokes the session unless it already is revoked. */
export async function revokeSession(
  data: DataAccess,
  sessionId: string,
  at: Date,
  reason: string,
): Promise<void> {
  await executeBound(
    data,
    'update sessions set revoked_at = $2, revoked_reason = $3 where id = $1 and revoked_at is null',
    [sessionId, at, reason],
  );
}

export async function sessionIdsOf(data: DataAccess, userId: string): Promise<string[]> {
  const rows = await executeBound<{ id: string }>(data, 'select id from sessions where user_id = $1', [
    userId,
  ]);
  return rows.map((row) => row.id);
}

// One statement, so a session never exists without its first token.
const WRITE_SESSION = namedSql<{
  sessionId: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  tokenHash: Buffer;
}>(
  `with session as (
     insert into sessions (id, user_id, created_at, expires_at) values (:sessionId, :userId, :createdAt, :expiresAt)
   )
   insert into refresh_tokens (token_hash, session_id, created_at, expires_at)
   values (:tokenHash, :sessionId, :createdAt, :expiresAt)`,
);

/** Writes a new session of the user and its first refresh token. */
export async function writeSession(
  data: DataAccess,
  userId: string,
  refresh: { tokenHash: Buffer; createdAt: Date; expiresAt: Date; sessionId: string },
): Promise<void> {
  await executeNamed(data, WRITE_SESSION, { ...refresh, userId });
}

const ROTATE_REFRESH_TOKEN = namedSql<{
  presented: Buffer;
  next: Buffer;
  sessionId: string;
  at: Date;
  expiresAt: Date;
}>(
  `with spent as (update refresh_tokens set rotated_at = :at where token_hash = :presented),
        extended as (update sessions set last_refreshed_at = :at, expires_at = :expiresAt where id = :sessionId)
   insert into refresh_tokens (token_hash, session_id, created_at, expires_at)
   values (:next, :sessionId, :at, :expiresAt)`,
);

/**
 * Spends the presented refresh token and extends its session with the next token, in one
 * statement: the caller holds both rows' locks (lockRefreshToken, then lockSession), so a
 * concurrent refresh of the same token waits and then finds it rotated.
 */
export async function rotateRefreshToken(
  data: DataAccess,
  rotation: { presented: Buffer; next: Buffer; sessionId: string; at: Date; expiresAt: Date },
): Promise<void> {
  await executeNamed(data, ROTATE_REFRESH_TOKEN, rotation);
}

/**
 * Revokes every session of the user not revoked yet (suspension, an admin's revocation): their
 * refresh tokens stop working; answers their ids, whose access tokens the caller then revokes.
 */
export async function revokeSessionsOf(
  data: DataAccess,
  userId: string,
  at: Date,
  reason: string,
): Promise<string[]> {
  const rows = await executeBound<{ id: string }>(
    data,
    `update sessions set revoked_at = $2, revoked_reason = $3
     where user_id = $1 and revoked_at is null
     returning id`,
    [userId, at, reason],
  );
  return rows.map((row) => row.id);
}

/** A session as the operator console lists it: never a token. */
export interface SessionRow {
  id: string;
  created_at: Date;
  expires_at: Date;
  last_refreshed_at: Date | null;
  revoked_at: Date | null;
  revoked_reason: string | null;
}

/** The user's `limit` most recent sessions, newest first. */
export function recentSessionsOf(data: DataAccess, userId: string, limit: number): Promise<SessionRow[]> {
  return executeBound<SessionRow>(
    data,
    `select id, created_at, expires_at, last_refreshed_at, revoked_at, revoked_reason
     from sessions where user_id = $1
     order by created_at desc, id desc
     limit $2`,
    [userId, limit],
  );
}
