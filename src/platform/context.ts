import type { EntityManager } from '@mikro-orm/postgresql';
import type { AuthUser } from './auth/access-tokens.js';
import type { GameServerPrincipal } from './auth/game-server-auth.js';
import { AppError, ErrorCode } from './errors.js';
import type { Kv } from './kv/kv.js';
import type { LogSink } from './log.js';

/**
 * What a service call runs with, passed explicitly as its first argument: a request-scoped
 * entity manager, the caller (null when anonymous), the KV store, a logger and the clock.
 * REST routes and gateway handlers build it the same way, so a service never knows its transport.
 */
export interface Ctx {
  em: EntityManager;
  user: AuthUser | null;
  /** The dedicated game server calling the internal API; null for users and anonymous callers. */
  gameServer: GameServerPrincipal | null;
  kv: Kv;
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

/** Who a request or frame speaks for; a Fastify request or a gateway connection's fields. */
export interface Caller {
  user: AuthUser | null;
  gameServer?: GameServerPrincipal | null;
  log: LogSink;
  ip: string;
}

/**
 * The Ctx a route or frame handler builds per call. The entity manager is forked on first use,
 * so hot paths such as a heartbeat never touch the ORM, and the caller's fields are read when
 * asked for (a Fastify request computes `ip` in a getter, through the trusted-proxy rules).
 */
export class CallContext implements Ctx {
  private forked: EntityManager | undefined;

  constructor(
    private readonly rootEm: EntityManager,
    readonly kv: Kv,
    private readonly caller: Caller,
  ) {}

  get em(): EntityManager {
    this.forked ??= this.rootEm.fork();
    return this.forked;
  }

  get user(): AuthUser | null {
    return this.caller.user;
  }

  get gameServer(): GameServerPrincipal | null {
    return this.caller.gameServer ?? null;
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
