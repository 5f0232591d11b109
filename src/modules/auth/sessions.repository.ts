import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import { type DataAccess, entityManagerOf } from '../../platform/data-handle.js';
import { executeBound } from '../../platform/db.js';
import type { User } from '../users/index.js';
import { type RefreshToken, RefreshTokenSchema, type Session, SessionSchema } from './session.entity.js';

/**
 * Sessions and refresh tokens through the ORM: logins, rotations and logouts are rare next to
 * requests, and the refresh's row locks and the registration's unique violations read best as
 * entities and a unit of work.
 */

/**
 * Writes what the unit of work of `data` holds (a registration's new account). When a unique
 * index refuses it, answers the constraint's name (or the error's message, where the driver names
 * none) and clears the unit of work, so nothing of the refused account is written later.
 */
export async function flushNewAccount(data: DataAccess): Promise<{ uniqueViolated: string } | undefined> {
  const em = entityManagerOf(data);
  try {
    await em.flush();
    return undefined;
  } catch (error) {
    em.clear();
    if (!(error instanceof UniqueConstraintViolationException)) throw error;
    return { uniqueViolated: (error as { constraint?: string }).constraint ?? error.message };
  }
}

/** The refresh token of this hash, its row locked until the transaction of `data` ends. */
export function lockRefreshToken(data: DataAccess, tokenHash: Buffer): Promise<RefreshToken | null> {
  return entityManagerOf(data).findOne(
    RefreshTokenSchema,
    { tokenHash },
    { lockMode: LockMode.PESSIMISTIC_WRITE },
  );
}

/** The session, its row locked until the transaction of `data` ends. */
export function lockSession(data: DataAccess, sessionId: string): Promise<Session | null> {
  return entityManagerOf(data).findOne(
    SessionSchema,
    { id: sessionId },
    { lockMode: LockMode.PESSIMISTIC_WRITE },
  );
}

export function findRefreshToken(data: DataAccess, tokenHash: Buffer): Promise<RefreshToken | null> {
  return entityManagerOf(data).findOne(RefreshTokenSchema, { tokenHash });
}

/** Adds a refresh token of the session to the unit of work, written at its next flush. */
export function addRefreshToken(
  data: DataAccess,
  token: { tokenHash: Buffer; session: Session; createdAt: Date; expiresAt: Date },
): void {
  entityManagerOf(data).create(RefreshTokenSchema, { ...token, rotatedAt: null });
}

/** Revokes the session unless it already is revoked. */
export async function revokeSession(
  data: DataAccess,
  sessionId: string,
  at: Date,
  reason: string,
): Promise<void> {
  await entityManagerOf(data).nativeUpdate(
    SessionSchema,
    { id: sessionId, revokedAt: null },
    { revokedAt: at, revokedReason: reason },
  );
}

export async function sessionIdsOf(data: DataAccess, userId: string): Promise<string[]> {
  const sessions = await entityManagerOf(data).find(SessionSchema, { user: userId }, { fields: ['id'] });
  return sessions.map((s) => s.id);
}

/**
 * Writes a new session of the user and its first refresh token, with whatever else the unit of
 * work of `data` holds (a registration's account).
 */
export async function writeSession(
  data: DataAccess,
  user: User,
  refresh: { tokenHash: Buffer; createdAt: Date; expiresAt: Date; sessionId: string },
): Promise<Session> {
  const em = entityManagerOf(data);
  const session = em.create(SessionSchema, {
    id: refresh.sessionId,
    user,
    createdAt: refresh.createdAt,
    expiresAt: refresh.expiresAt,
    lastRefreshedAt: null,
    revokedAt: null,
    revokedReason: null,
  });
  addRefreshToken(data, {
    tokenHash: refresh.tokenHash,
    session,
    createdAt: refresh.createdAt,
    expiresAt: refresh.expiresAt,
  });
  await em.flush();
  return session;
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
