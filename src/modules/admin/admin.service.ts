import {
  ADMIN_SESSIONS_SHOWN,
  type AdminUser,
  type AdminUserDetail,
  SUSPENSION_MAX_YEARS,
  SUSPENSION_REASON_MAX,
} from '../../../protocol/admin.js';
import type { AccessTokens, Role } from '../../platform/auth/access-tokens.js';
import { type Ctx, hasRole, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { trimmedText } from '../../platform/trimmed-text.js';
import type { AuditApi } from '../audit/index.js';
import type { AuthApi } from '../auth/index.js';
import {
  type DirectoryRow,
  suspensionInForce,
  suspensionJson,
  type User,
  type UsersApi,
} from '../users/index.js';

export interface AdminDeps {
  users: Pick<
    UsersApi,
    'suspendAccount' | 'liftSuspension' | 'changeRoleById' | 'directoryEntry' | 'directoryPage'
  >;
  sessions: Pick<AuthApi, 'revokeSessionsOf' | 'recentSessionsOf'>;
  /** Announces revoked sessions to every node: their access tokens fail and their sockets close with 4403. */
  tokens: Pick<AccessTokens, 'revokeSessions'>;
  audit: AuditApi;
}

type Page = { limit: number; cursor?: string | undefined };

const noSuchUser = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');
const iso = (date: Date | null | undefined) => (date ? new Date(date).toISOString() : null);
const YEAR_MS = 365.25 * 24 * 3600 * 1000;
/** Moderators and admins administer accounts (roles from the access token); roles and sessions are for admins. */
const STAFF_ONLY = 'Only moderators and admins can administer accounts.';
const ADMINS_ONLY = 'Only admins can do this.';

/** The account's id, canonical; an id that cannot name an account is a 404 like an unknown one. */
function userIdOf(userId: string): string {
  if (!isId(userId)) throw noSuchUser();
  return canonicalId(userId);
}

/** An account as the console shows it, from a directory row. */
function fromRow(row: DirectoryRow, now: Date): AdminUser {
  const suspension = suspensionInForce(
    {
      suspendedAt: row.suspended_at,
      suspendedUntil: row.suspended_until,
      suspensionReason: row.suspension_reason,
      suspendedBy: row.suspended_by,
    },
    now,
  );
  return {
    id: row.id,
    username: row.username,
    created_at: new Date(row.created_at).toISOString(),
    last_seen_at: iso(row.last_seen_at),
    roles: row.roles,
    suspension: suspensionJson(suspension),
  };
}

/** The same from the entity a suspension just wrote. */
function fromEntity(user: User, now: Date): AdminUser {
  return {
    id: user.id,
    username: user.username,
    created_at: user.createdAt.toISOString(),
    last_seen_at: iso(user.lastSeenAt),
    roles: user.roles,
    suspension: suspensionJson(suspensionInForce(user, now)),
  };
}

/**
 * The operator console's account administration (docs/admin.md). Moderators and admins look
 * accounts up, suspend them and lift their suspension (a moderator only accounts without a
 * moderating role); roles and sessions are for admins. Each change is audited in its transaction by the rule it runs.
 */
export class AdminService {
  constructor(private readonly deps: AdminDeps) {}

  async list(ctx: Ctx, query: Page & { query?: string | undefined }) {
    requireRole(ctx, 'moderator', STAFF_ONLY);
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const search =
      query.query === undefined
        ? undefined
        : isId(query.query)
          ? { id: canonicalId(query.query) }
          : { username: query.query };
    const rows = await this.deps.users.directoryPage(ctx.data, search, { after, limit: query.limit + 1 });
    const now = ctx.now();
    return pageFrom(
      rows,
      query.limit,
      (row) => fromRow(row, now),
      (row) => [row.created_key, row.id],
    );
  }

  async get(ctx: Ctx, userId: string): Promise<AdminUserDetail> {
    requireRole(ctx, 'moderator', STAFF_ONLY);
    const id = userIdOf(userId);
    const row = await this.deps.users.directoryEntry(ctx.data, id);
    if (!row) throw noSuchUser();
    const sessions = await this.deps.sessions.recentSessionsOf(ctx.data, id, ADMIN_SESSIONS_SHOWN);
    return {
      ...fromRow(row, ctx.now()),
      sessions: sessions.map((s) => ({
        id: s.id,
        created_at: iso(s.created_at) as string,
        expires_at: iso(s.expires_at) as string,
        last_refreshed_at: iso(s.last_refreshed_at),
        revoked_at: iso(s.revoked_at),
        revoked_reason: s.revoked_reason,
      })),
    };
  }

  /** Suspends the account and revokes its sessions in one transaction; the sockets close after the commit. */
  async suspend(
    ctx: Ctx,
    userId: string,
    input: { reason: string; until?: string | undefined },
  ): Promise<AdminUser> {
    const caller = requireRole(ctx, 'moderator', STAFF_ONLY);
    const admin = hasRole(caller, 'admin');
    const reason = trimmedText(input.reason, { path: 'reason', max: SUSPENSION_REASON_MAX });
    const now = ctx.now();
    const until = input.until === undefined ? null : suspensionEnd(input.until, now);
    const id = userIdOf(userId);
    const { user, revoked } = await transaction(ctx.data, async (tx) => {
      const suspended = await this.deps.users.suspendAccount(
        tx,
        id,
        { reason, until, at: now },
        { kind: 'user', id: caller.id, admin },
      );
      return {
        user: suspended,
        revoked: await this.deps.sessions.revokeSessionsOf(tx, id, now, 'suspended'),
      };
    });
    await this.deps.tokens.revokeSessions(revoked);
    return fromEntity(user, now);
  }

  async unsuspend(ctx: Ctx, userId: string): Promise<AdminUser> {
    const caller = requireRole(ctx, 'moderator', STAFF_ONLY);
    const admin = hasRole(caller, 'admin');
    const now = ctx.now();
    const user = await this.deps.users.liftSuspension(ctx.data, userIdOf(userId), now, {
      kind: 'user',
      id: caller.id,
      admin,
    });
    return fromEntity(user, now);
  }

  async changeRole(ctx: Ctx, userId: string, role: Role, change: 'grant' | 'revoke'): Promise<AdminUser> {
    const caller = requireRole(ctx, 'admin', ADMINS_ONLY);
    const id = userIdOf(userId);
    await this.deps.users.changeRoleById(ctx.data, id, role, change, { kind: 'user', id: caller.id });
    const row = await this.deps.users.directoryEntry(ctx.data, id);
    if (!row) throw noSuchUser();
    return fromRow(row, ctx.now());
  }

  /** Revokes every open session of the account, audited; the sockets close after the commit. */
  async revokeSessions(ctx: Ctx, userId: string): Promise<{ revoked_sessions: number }> {
    const caller = requireRole(ctx, 'admin', ADMINS_ONLY);
    const id = userIdOf(userId);
    const now = ctx.now();
    const revoked = await transaction(ctx.data, async (tx) => {
      if (!(await this.deps.users.directoryEntry(tx, id))) throw noSuchUser();
      const ids = await this.deps.sessions.revokeSessionsOf(tx, id, now, 'admin');
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: caller.id },
        action: 'users.sessions.revoke',
        target: { type: 'user', id },
        before: { open_sessions: ids },
        after: { open_sessions: [] },
      });
      return ids;
    });
    await this.deps.tokens.revokeSessions(revoked);
    return { revoked_sessions: revoked.length };
  }
}

/** The end of a suspension: a time in the future, at most SUSPENSION_MAX_YEARS ahead. */
function suspensionEnd(until: string, now: Date): Date {
  const end = new Date(until);
  const refuse = (message: string) =>
    new AppError(ErrorCode.VALIDATION_FAILED, `until: ${message}`, { errors: [{ path: 'until', message }] });
  if (Number.isNaN(end.getTime())) throw refuse('must be a date and time');
  if (end.getTime() <= now.getTime()) throw refuse('must be in the future');
  if (end.getTime() > now.getTime() + SUSPENSION_MAX_YEARS * YEAR_MS)
    throw refuse(
      `must be at most ${SUSPENSION_MAX_YEARS} years ahead; leave it out for an indefinite suspension`,
    );
  return end;
}
