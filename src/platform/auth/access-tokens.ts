import { SignJWT } from 'jose';
import { batched } from '../batcher.js';
import type { EventBus } from '../bus.js';
import { AppError, ErrorCode } from '../errors.js';
import type { Kv } from '../kv/kv.js';
import { JwtRejected, verifyRs256Jwt } from './jwt-verify.js';
import type { KeyRing } from './keys.js';

export const roles = ['user', 'moderator', 'admin'] as const;
export type Role = (typeof roles)[number];

/** Who is calling, as proven by a verified access token. */
export interface AuthUser {
  id: string;
  sessionId: string;
  roles: Role[];
  /** When the proving access token expires (ms since the epoch); set by `verify`. */
  expiresAt?: number;
}

/** Bus topic on which revoked session ids are announced, so every gateway can end their sockets. */
export const SESSION_REVOCATIONS_TOPIC = 'auth:session-revocations';

const AUDIENCE = 'atrium-api';
/**
 * Verified tokens remembered, so a client's repeated requests skip the RS256 check (about 50 µs
 * each); expiry and revocation are still checked on every use.
 */
const VERIFIED_CACHE_SIZE = 10_000;
/**
 * The cache is keyed by the token's last characters, the end of its RS256 signature: hashing the
 * whole ~700-character token for the lookup cost every request more than a microsecond. A hit
 * counts only if the whole token equals the one that was verified. Reaching that comparison
 * takes knowing these 32 characters (192 bits) of a valid token's signature already, so it
 * needs no constant-time compare.
 */
const CACHE_KEY_LENGTH = 32;

interface VerifiedToken {
  token: string;
  user: AuthUser;
}

/**
 * Where revocations are kept durably (the database), so their KV marks can be rebuilt when the
 * KV store loses them.
 */
export interface RevocationLog {
  /** Records revocations made at `at`; entries older than `forgetBefore` no longer matter. */
  record(sessionIds: readonly string[], at: Date, forgetBefore: Date): Promise<void>;
  /** Ids of the sessions revoked at or after `at`. */
  since(at: Date): Promise<string[]>;
}

/**
 * Present in the KV store once the revocation marks have been rebuilt from the log. A store that
 * lost its data (a restart of the in-process store, a Redis without persistence) lost this key
 * with the marks, so its absence is what says a rebuild is due.
 */
const MARKS_RESTORED_KEY = 'auth:revocation-marks-restored';

/** The most marks one read asks for; more waiting go in the next. */
const MARKS_PER_READ = 200;
/**
 * Mark reads out at once. Two, as for statements (statementsAtOnce): one is answered while the
 * next one's verifications gather.
 */
const MARK_READS_AT_ONCE = 2;

interface AccessTokenOptions {
  keys: KeyRing;
  kv: Kv;
  /** Tools that only sign or verify go without; the service always has one. */
  revocations?: RevocationLog;
  /** Announces revocations to every node's gateway; optional for tools that only sign or verify. */
  bus?: EventBus;
  issuer: string;
  ttlSeconds: number;
  now?: () => Date;
}

/**
 * Signs and verifies RS256 access tokens. This one verifier serves REST (the auth hook) and the
 * gateway (the auth frame), so both accept and refuse exactly the same tokens.
 *
 * Access tokens are short-lived and stateless, but a revoked session (logout, refresh-token reuse,
 * account deletion) is remembered in the KV store for one token lifetime, so its access tokens
 * stop working at once instead of at expiry.
 */
export class AccessTokens {
  /** Milliseconds since the epoch; without a test clock no Date is built on the hot path. */
  private readonly nowMs: () => number;
  private readonly verified = new Map<string, VerifiedToken>();
  private restoring: Promise<void> | undefined;
  /**
   * Reads a session's revocation mark, with the marker that says the marks are whole riding along.
   * On Redis, verifications made while reads are out wait and share the next one (`batched`):
   * every authenticated request reads a mark, and one MGET for many of them costs a busy node one
   * Redis command (its objects, its timer) instead of one each.
   */
  private readonly readMark: (sessionId: string) => Promise<{ revoked: boolean; restored: boolean }>;

  constructor(private readonly options: AccessTokenOptions) {
    const clock = options.now;
    this.nowMs = clock ? () => clock().getTime() : Date.now;
    const readMarks = async (sessionIds: readonly string[]) => {
      const [restored, ...marks] = await options.kv.mget([MARKS_RESTORED_KEY, ...sessionIds.map(revokedKey)]);
      return marks.map((mark) => ({ revoked: mark !== null, restored: restored !== null }));
    };
    // The in-process store answers at once: there, waiting to share a read would only add work.
    this.readMark =
      options.kv.kind === 'redis'
        ? batched(readMarks, { maxSize: MARKS_PER_READ, maxInFlight: MARK_READS_AT_ONCE })
        : async (sessionId) => (await readMarks([sessionId]))[0] as { revoked: boolean; restored: boolean };
  }

  get ttlSeconds(): number {
    return this.options.ttlSeconds;
  }

  async issue(user: AuthUser): Promise<string> {
    const { keys, issuer, ttlSeconds } = this.options;
    const iat = Math.floor(this.nowMs() / 1000);
    return new SignJWT({ sid: user.sessionId, roles: user.roles })
      .setProtectedHeader({ alg: 'RS256', kid: keys.signing.kid, typ: 'JWT' })
      .setSubject(user.id)
      .setIssuer(issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttlSeconds)
      .sign(keys.signing.privateKey);
  }

  /**
   * Returns the caller or throws UNAUTHENTICATED; the reason goes to the detail, never a different
   * code. `remember: false` skips the verified-token cache, for callers that present a token once
   * (a socket's auth frame) and would only fill it.
   */
  async verify(token: string, options: { remember?: boolean } = {}): Promise<AuthUser> {
    const user = this.cached(token) ?? (await this.verifySignature(token, options.remember ?? true));
    let { revoked, restored } = await this.readMark(user.sessionId);
    if (!restored && this.options.revocations) {
      await this.restoreMarks();
      revoked = (await this.options.kv.get(revokedKey(user.sessionId))) !== null;
    }
    if (revoked) throw new AppError(ErrorCode.UNAUTHENTICATED, 'The session has been revoked.');
    return user;
  }

  /**
   * Rewrites the marks of every session revoked within a mark's lifetime from the durable log,
   * then sets the marker. Concurrent callers share one rebuild.
   */
  private restoreMarks(): Promise<void> {
    this.restoring ??= (async () => {
      const revocations = this.options.revocations as RevocationLog;
      const sessionIds = await revocations.since(new Date(this.nowMs() - this.markTtlMs));
      await this.options.kv.msetWithTtl(
        sessionIds.map((sid) => [revokedKey(sid), '1'] as const),
        this.markTtlMs,
      );
      await this.options.kv.set(MARKS_RESTORED_KEY, '1');
    })().finally(() => {
      this.restoring = undefined;
    });
    return this.restoring;
  }

  /** Keep a mark a little longer than a token lives, to cover clock skew between nodes. */
  private get markTtlMs(): number {
    return (this.options.ttlSeconds + 60) * 1000;
  }

  private cached(token: string): AuthUser | undefined {
    const key = token.slice(-CACHE_KEY_LENGTH);
    const entry = this.verified.get(key);
    if (entry?.token !== token) return undefined;
    if ((entry.user.expiresAt ?? 0) > this.nowMs()) return entry.user;
    this.verified.delete(key);
    return undefined;
  }

  private async verifySignature(token: string, remember: boolean): Promise<AuthUser> {
    let claims: Record<string, unknown>;
    try {
      const { keys, issuer } = this.options;
      claims = verifyRs256Jwt(token, {
        keyFor: (kid) => keys.verification.get(kid),
        issuer,
        audience: AUDIENCE,
        nowSeconds: Math.floor(this.nowMs() / 1000),
      });
    } catch (error) {
      if (!(error instanceof JwtRejected)) throw error;
      throw new AppError(
        ErrorCode.UNAUTHENTICATED,
        error.reason === 'expired' ? 'The access token has expired.' : 'The access token is invalid.',
      );
    }
    const user = toAuthUser(claims);
    if (!user) throw new AppError(ErrorCode.UNAUTHENTICATED, 'The access token is invalid.');
    if (!remember) return user;
    if (this.verified.size >= VERIFIED_CACHE_SIZE) {
      // Maps iterate in insertion order: dropping the first entry evicts the oldest.
      this.verified.delete(this.verified.keys().next().value as string);
    }
    this.verified.set(token.slice(-CACHE_KEY_LENGTH), { token, user });
    return user;
  }

  /** Makes every access token of these sessions fail verification from now on. */
  async revokeSessions(sessionIds: readonly string[]): Promise<void> {
    if (sessionIds.length === 0) return;
    // Durable first: a mark the KV store later loses is rebuilt from the log.
    const now = this.nowMs();
    await this.options.revocations?.record(sessionIds, new Date(now), new Date(now - this.markTtlMs));
    await this.options.kv.msetWithTtl(
      sessionIds.map((sid) => [revokedKey(sid), '1'] as const),
      this.markTtlMs,
    );
    await this.options.bus?.publish(SESSION_REVOCATIONS_TOPIC, {
      t: 'revoked',
      d: { session_ids: sessionIds },
    });
  }
}

function revokedKey(sessionId: string): string {
  return `auth:revoked-session:${sessionId}`;
}

function toAuthUser(claims: Record<string, unknown>): AuthUser | undefined {
  const { sub, sid, exp } = claims;
  const claimed = claims.roles;
  if (typeof sub !== 'string' || typeof sid !== 'string' || !Array.isArray(claimed)) return undefined;
  if (!claimed.every((r): r is Role => (roles as readonly unknown[]).includes(r))) return undefined;
  return {
    id: sub,
    sessionId: sid,
    roles: claimed,
    ...(typeof exp === 'number' ? { expiresAt: exp * 1000 } : {}),
  };
}
