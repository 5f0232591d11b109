import type { EntityManager } from '@mikro-orm/postgresql';
import type { BaseLogger } from 'pino';
import type { AuthUser } from './auth/access-tokens.js';
import { AppError, ErrorCode } from './errors.js';
import type { Kv } from './kv/kv.js';

/**
 * What a service call runs with, passed explicitly as its first argument: a request-scoped
 * entity manager, the caller (null when anonymous), the KV store, a logger and the clock.
 * REST routes and gateway handlers build it the same way, so a service never knows its transport.
 */
export interface Ctx {
  em: EntityManager;
  user: AuthUser | null;
  kv: Kv;
  log: BaseLogger;
  now(): Date;
  /** The client's address, for rate limits keyed by IP. */
  ip: string;
}

/** The caller, or UNAUTHENTICATED: services check authorization themselves, not only routes. */
export function callerOf(ctx: Ctx): AuthUser {
  if (!ctx.user) throw new AppError(ErrorCode.UNAUTHENTICATED, 'Authentication is required.');
  return ctx.user;
}
