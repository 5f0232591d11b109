import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Role } from '../../platform/auth/access-tokens.js';
import { hasRole } from '../../platform/context.js';
import type { Kv } from '../../platform/kv/kv.js';

/**
 * Console sessions live in the KV store, so every node of a deployment serves the same signed-in
 * operator. The browser holds only a random id in an HttpOnly cookie; the store keys the record by
 * the id's SHA-256, so a copy of the store does not hand out live sessions. The record holds the
 * operator's API tokens (never sent to the browser) and the session's CSRF token.
 */

export type OperatorRole = 'moderator' | 'admin';

export interface ConsoleSession {
  userId: string;
  username: string;
  roles: Role[];
  accessToken: string;
  /** Ms since the epoch; the access token is refreshed shortly before. */
  accessExpiresAt: number;
  refreshToken: string;
  /** Sent in every form of the session and compared on every state-changing request. */
  csrf: string;
  /** What the last action did, shown once on the next page. */
  flash?: Flash;
}

export interface Flash {
  kind: 'notice' | 'error';
  text: string;
}

/** A random token: 32 bytes, base64url (a cookie value and a form field alike, never escaped). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Compares two secrets in time independent of where they differ. */
export function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The operator role a session's roles grant, the highest first; undefined for a plain user. */
export function operatorRole(roles: readonly Role[]): OperatorRole | undefined {
  if (hasRole({ roles }, 'admin')) return 'admin';
  if (hasRole({ roles }, 'moderator')) return 'moderator';
  return undefined;
}

/**
 * Whether roles open what `needed` guards, ranked as the API ranks them: admins open everything,
 * moderators moderator pages.
 */
export function allows(roles: readonly Role[], needed: OperatorRole): boolean {
  return hasRole({ roles }, needed);
}

export class ConsoleSessions {
  constructor(
    private readonly kv: Kv,
    private readonly idleMs: number,
  ) {}

  private key(id: string): string {
    return `console:session:${createHash('sha256').update(id).digest('base64url')}`;
  }

  /** Stores a new session and returns its id, for the cookie. */
  async create(session: ConsoleSession): Promise<string> {
    const id = randomToken();
    await this.kv.set(this.key(id), JSON.stringify(session), { ttlMs: this.idleMs });
    return id;
  }

  /** The session of a cookie's id, its idle time restarted; undefined when unknown or expired. */
  async get(id: string | undefined): Promise<ConsoleSession | undefined> {
    if (!id || id.length > 64) return undefined;
    const stored = await this.kv.get(this.key(id));
    if (stored === null) return undefined;
    await this.kv.expire(this.key(id), this.idleMs);
    return JSON.parse(stored) as ConsoleSession;
  }

  async save(id: string, session: ConsoleSession): Promise<void> {
    await this.kv.set(this.key(id), JSON.stringify(session), { ttlMs: this.idleMs });
  }

  async destroy(id: string): Promise<void> {
    await this.kv.del(this.key(id));
  }
}
