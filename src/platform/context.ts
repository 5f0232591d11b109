import type { AuthUser, Role } from './auth/access-tokens.js';
import type { ServicePrincipal } from './auth/service-tokens.js';
import type { DataAccess } from './data-access.js';
import { AppError, ErrorCode } from './errors.js';
import type { LogSink } from './log.js';

/**
 * What a service call runs with, passed explicitly as its first argument: its handle on the
 * database, the caller (null when anonymous), a logger and the clock.
 * REST routes and gateway handlers build it the same way, so a service never knows its transport.
 */
export interface Ctx {
  /** Passed to repositories and `transaction`; never opened by a service. */
  data: DataAccess;
  user: AuthUser | null;
  /** The service calling with its service token (auth/service-tokens.ts); null for users and anonymous callers. */
  service: ServicePrincipal | null;
  log: LogSink;
  now(): Date;
  /** The client's address, for rate limits keyed by IP. */
  ip: string;
}

/** The caller, or UNAUTHENTICATED: services check authorization themselves, not only routes. */
export function callerOf(ctx: Ctx): AuthUser {
  if (!ctx.user) throw new AppError(ErrorCode.UNAUTHENTICATED, 'Authentication is required.');
  return ctx.user;
}

/** Each role's rank: a role includes the powers of every role ranked below it. */
const rank: Record<Role, number> = { user: 0, moderator: 1, admin: 2 };

/**
 * Whether `holder` (the caller, or an account a rule looks at) holds `role` or a role above it
 * (an admin moderates too).
 */
export function hasRole(holder: { readonly roles: readonly Role[] }, role: Role): boolean {
  return holder.roles.some((held) => rank[held] >= rank[role]);
}

/**
 * The caller when they hold `role` or a role above it (from their access token), or FORBIDDEN
 * (with `refusal` as its message, when given): the one check of staff powers, made in services.
 */
export function requireRole(ctx: Ctx, role: Role, refusal?: string): AuthUser {
  const caller = callerOf(ctx);
  if (hasRole(caller, role)) return caller;
  const fallback = role === 'admin' ? 'Only admins may do this.' : 'Only moderators and admins may do this.';
  throw new AppError(ErrorCode.FORBIDDEN, refusal ?? fallback);
}

/** Who a request or frame speaks for; a Fastify request or a gateway connection's fields. */
export interface Caller {
  user: AuthUser | null;
  service?: ServicePrincipal | null;
  log: LogSink;
  ip: string;
}

/**
 * The Ctx a route or frame handler builds per call: the database's root handle, and the caller's
 * fields read when asked for (a Fastify request computes `ip` in a getter, through the
 * trusted-proxy rules).
 */
export class CallContext implements Ctx {
  constructor(
    readonly data: DataAccess,
    private readonly caller: Caller,
  ) {}

  get user(): AuthUser | null {
    return this.caller.user;
  }

  get service(): ServicePrincipal | null {
    return this.caller.service ?? null;
  }

  get log(): LogSink {
    return this.caller.log;
  }

  get ip(): string {
    return this.caller.ip;
  }

  now(): Date {
    return new Date();
  }
}
