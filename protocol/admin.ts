import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';
import { roleSchema } from './users.js';

/**
 * The operator console's account administration (docs/admin.md): lookups for moderators and
 * admins, suspensions, role changes and session revocation. Every change appends an entry to the
 * audit log (protocol/audit.ts) in its own transaction.
 */

/** The longest suspension reason, in characters. */
export const SUSPENSION_REASON_MAX = 500;
/** The furthest a suspension may end, from now: a longer one is indefinite (no `until`). */
export const SUSPENSION_MAX_YEARS = 10;
/** The sessions an account's detail lists, newest first. */
export const ADMIN_SESSIONS_SHOWN = 50;

const id = z.string().max(64);

/** A suspension in force; a lifted or lapsed one is not shown. */
export const suspensionSchema = z.object({
  reason: z.string(),
  suspended_at: z.string(),
  /** When it ends by itself; null: until lifted. */
  suspended_until: z.string().nullable(),
  /** The account that suspended it; null for the CLI. */
  suspended_by: z.string().nullable(),
});

export const adminUserSchema = z.object({
  id: z.string(),
  username: z.string(),
  created_at: z.string(),
  last_seen_at: z.string().nullable(),
  roles: z.array(roleSchema),
  suspension: suspensionSchema.nullable(),
});
export type AdminUser = z.infer<typeof adminUserSchema>;

/** A session of an account: never its tokens. */
export const adminSessionSchema = z.object({
  id: z.string(),
  created_at: z.string(),
  /** When its refresh token stops working (moved on at each refresh). */
  expires_at: z.string(),
  last_refreshed_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  /** `logout`, `refresh_token_reuse`, `suspended`, `admin`... */
  revoked_reason: z.string().nullable(),
});

export const adminUserDetailSchema = adminUserSchema.extend({
  /** The account's most recent sessions (at most ADMIN_SESSIONS_SHOWN), newest first. */
  sessions: z.array(adminSessionSchema),
});
export type AdminUserDetail = z.infer<typeof adminUserDetailSchema>;

const tag = 'admin';

export const adminUsersList = operation('admin.users.list', {
  tag,
  summary:
    'Moderators and admins: accounts newest first; `query` is an exact account id or a part of a username (case-insensitively).',
  rest: { method: 'GET', path: '/api/admin/users' },
  request: z.object({ query: text(1, 64).optional(), ...listQuery }).strict(),
  response: pageOf(adminUserSchema),
  errors: [401, 403, 422],
});

export const adminUsersGet = operation('admin.users.get', {
  tag,
  summary: 'Moderators and admins: one account with its roles, its suspension and its most recent sessions.',
  rest: { method: 'GET', path: '/api/admin/users/:user_id' },
  request: z.object({ user_id: id }).strict(),
  response: adminUserDetailSchema,
  errors: [401, 403, 404],
});

export const adminUsersSuspend = operation('admin.users.suspend', {
  tag,
  summary:
    'Moderators and admins: suspend an account (replacing a suspension in force), until `until` (in the future, at most 10 years ahead) or, without it, until lifted. Its sessions are revoked and its sockets close with 4403 on every node; login and refresh answer 403 ACCOUNT_SUSPENDED. Only admins suspend moderators and admins; nobody suspends themselves (409).',
  rest: { method: 'POST', path: '/api/admin/users/:user_id/suspension' },
  request: z
    .object({
      user_id: id,
      reason: text(1, SUSPENSION_REASON_MAX),
      until: z.iso.datetime({ offset: true }).optional(),
    })
    .strict(),
  response: adminUserSchema,
  errors: [401, 403, 404, 409, 422],
});

export const adminUsersUnsuspend = operation('admin.users.unsuspend', {
  tag,
  summary:
    'Moderators and admins: lift the suspension of an account. Lifting needs the rank imposing needed: only admins lift the suspension of a moderator or an admin (403). Lifting one not in force changes nothing and answers the same.',
  rest: { method: 'DELETE', path: '/api/admin/users/:user_id/suspension' },
  request: z.object({ user_id: id }).strict(),
  response: adminUserSchema,
  errors: [401, 403, 404],
});

export const adminRolesGrant = operation('admin.users.roles.grant', {
  tag,
  summary:
    'Admins: give an account a role. Tokens carry roles: it takes effect at its next login or token refresh.',
  rest: { method: 'PUT', path: '/api/admin/users/:user_id/roles/:role' },
  request: z.object({ user_id: id, role: roleSchema }).strict(),
  response: adminUserSchema,
  errors: [401, 403, 404, 422],
});

export const adminRolesRevoke = operation('admin.users.roles.revoke', {
  tag,
  summary:
    'Admins: take a role from an account (never `user`: 422). An admin cannot remove their own admin role (409), so the last admin cannot lock everyone out. Effective at its next login or token refresh.',
  rest: { method: 'DELETE', path: '/api/admin/users/:user_id/roles/:role' },
  request: z.object({ user_id: id, role: roleSchema }).strict(),
  response: adminUserSchema,
  errors: [401, 403, 404, 409, 422],
});

export const adminSessionsRevoke = operation('admin.users.sessions.revoke', {
  tag,
  summary:
    'Admins: revoke every session of an account: its refresh tokens stop working and its sockets close with 4403 on every node. Answers how many sessions were still open.',
  rest: { method: 'DELETE', path: '/api/admin/users/:user_id/sessions' },
  request: z.object({ user_id: id }).strict(),
  response: z.object({ revoked_sessions: z.number().int() }),
  errors: [401, 403, 404],
});

export const adminOperations = [
  adminUsersList,
  adminUsersGet,
  adminUsersSuspend,
  adminUsersUnsuspend,
  adminRolesGrant,
  adminRolesRevoke,
  adminSessionsRevoke,
] as const;
