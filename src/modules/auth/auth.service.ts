import { createHash, randomBytes } from 'node:crypto';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { LoginRequest, RegisterRequest, TokenResponse } from '../../../protocol/auth.js';
import type { DomainEventData } from '../../../protocol/domain-events.js';
import type { AccessTokens, AuthUser } from '../../platform/auth/access-tokens.js';
import type { Ctx } from '../../platform/context.js';
import { transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { Outbox } from '../../platform/outbox.js';
import { consumeOrThrow, rateLimited } from '../../platform/rate-limit.js';
import { type Suspension, suspensionInForce, type User, type UsersApi } from '../users/index.js';
import type { Passwords } from './password.js';
import {
  lockRefreshToken,
  lockSession,
  revokeSession,
  rotateRefreshToken,
  sessionIdsOf,
  sessionOfRefreshToken,
  writeSession,
} from './sessions.repository.js';

export interface AuthServiceDeps {
  tokens: AccessTokens;
  passwords: Passwords;
  users: Pick<UsersApi, 'createUser' | 'findUserByUsername' | 'findUserById' | 'suspensionOf'>;
  refreshTtlSeconds: number;
  /** Failed logins per username before it is locked for the limiter's window. */
  maxLoginFailures: number;
  loginFailuresByUsername: RateLimiterAbstract;
  loginAttemptsByIp: RateLimiterAbstract;
  /** Registration hashes a password (tens of milliseconds of CPU), so it is limited per address too. */
  registrationsByIp: RateLimiterAbstract;
  /** `user.registered` is recorded with the account, when something consumes it. */
  outbox: Pick<Outbox, 'hasConsumers' | 'record'>;
}

const USER_REGISTERED = 'user.registered';

const invalidCredentials = () =>
  new AppError(ErrorCode.INVALID_CREDENTIALS, 'The username or password is wrong.');
const invalidRefreshToken = () =>
  new AppError(ErrorCode.INVALID_REFRESH_TOKEN, 'The refresh token is unknown, expired or revoked.');

/**
 * Accounts and sessions: registration with the 18+ gate, login, refresh-token rotation with reuse
 * detection, logout. A session is one login; its refresh tokens form a family, and presenting an
 * already-rotated token revokes the whole family, since only a thief or a replay can do that.
 */
export class AuthService {
  constructor(private readonly deps: AuthServiceDeps) {}

  async register(ctx: Ctx, input: RegisterRequest): Promise<TokenResponse> {
    if (!input.confirm_18_plus)
      throw new AppError(ErrorCode.AGE_GATE, 'You must confirm that you are 18 or older.');
    if (!input.accept_terms)
      throw new AppError(ErrorCode.TERMS_NOT_ACCEPTED, 'You must accept the terms of service.');
    await consumeOrThrow(this.deps.registrationsByIp, ctx.ip, 'Too many registrations from this address.');
    const now = ctx.now();
    const user: User = {
      id: newId(),
      username: input.username,
      email: input.email ?? null,
      passwordHash: await this.deps.passwords.hash(input.password),
      roles: ['user'],
      termsAcceptedAt: now,
      adultConfirmedAt: now,
      lastSeenAt: null,
      statusMessage: null,
      createdAt: now,
      updatedAt: now,
    };
    // The unique index on lower(username) decides races: of two concurrent registrations of
    // the same name, exactly one insert succeeds.
    if (this.deps.outbox.hasConsumers(USER_REGISTERED)) await this.createRecorded(ctx, user);
    else {
      const refused = await this.deps.users.createUser(ctx.data, user);
      if (refused) throw uniqueViolationError(refused.uniqueViolated);
    }
    return this.startSession(ctx, user);
  }

  /** The account and its `user.registered` event, committed together. */
  private createRecorded(ctx: Ctx, user: User): Promise<void> {
    return transaction(ctx.data, async (tx) => {
      const refused = await this.deps.users.createUser(tx, user);
      // Thrown inside, so the transaction the failed insert aborted rolls back.
      if (refused) throw uniqueViolationError(refused.uniqueViolated);
      const data: DomainEventData[typeof USER_REGISTERED] = {
        user_id: user.id,
        username: user.username,
        created_at: user.createdAt.toISOString(),
      };
      await this.deps.outbox.record(tx, USER_REGISTERED, data);
    });
  }

  async login(ctx: Ctx, input: LoginRequest): Promise<TokenResponse> {
    const { loginAttemptsByIp, loginFailuresByUsername, maxLoginFailures } = this.deps;
    const usernameKey = input.username.toLowerCase();
    // Together: one round trip instead of two, and one command timeout, not two, while Redis is
    // unreachable (each limiter then falls back to its in-memory insurance).
    const [, failures] = await Promise.all([
      consumeOrThrow(loginAttemptsByIp, ctx.ip, 'Too many login attempts from this address.'),
      loginFailuresByUsername.get(usernameKey),
    ]);
    if (failures && failures.consumedPoints >= maxLoginFailures) {
      throw rateLimited('Too many failed logins for this account; try again later.', failures.msBeforeNext);
    }
    const user = await this.deps.users.findUserByUsername(ctx.data, input.username);
    if (!(await this.deps.passwords.verify(user?.passwordHash, input.password)) || !user) {
      await loginFailuresByUsername.penalty(usernameKey);
      throw invalidCredentials();
    }
    await loginFailuresByUsername.delete(usernameKey);
    // After the password: only the account's holder learns that it is suspended.
    const suspension = suspensionInForce(user, ctx.now());
    if (suspension) throw accountSuspended(suspension);
    return this.startSession(ctx, user, async (sessionId) => {
      // A suspension that committed while this login ran revoked the sessions it saw, perhaps not
      // this one: its row lock held the new session's insert until it committed, so a read now
      // sees it, and the session is revoked before any token of it is issued.
      const late = suspensionInForce(
        (await this.deps.users.suspensionOf(ctx.data, user.id)) ?? {},
        ctx.now(),
      );
      if (!late) return;
      await revokeSession(ctx.data, sessionId, ctx.now(), 'suspended');
      throw accountSuspended(late);
    });
  }

  /**
   * Exchanges a refresh token for a new pair; the presented token is spent. One transaction locks
   * the token's row, then its session's (always in this order, so two refreshes never wait for
   * each other crosswise), decides, and writes: a second refresh of the same token waits for the
   * first to commit and then finds the token rotated, which is reuse.
   */
  async refresh(ctx: Ctx, refreshToken: string): Promise<TokenResponse> {
    const now = ctx.now();
    const presentedHash = hashToken(refreshToken);
    const outcome = await transaction(ctx.data, async (tx) => {
      const presented = await lockRefreshToken(tx, presentedHash);
      if (!presented) return { kind: 'invalid' as const };
      const session = await lockSession(tx, presented.sessionId);
      if (!session) return { kind: 'invalid' as const };
      const user = await this.deps.users.findUserById(tx, session.userId);
      if (!user) return { kind: 'invalid' as const };
      // Before the revocation check: suspending revokes every session, and the holder of one of
      // its tokens is told why it stopped working.
      const suspension = suspensionInForce(user, now);
      if (suspension) return { kind: 'suspended' as const, suspension };
      if (session.revokedAt) return { kind: 'invalid' as const };
      if (presented.rotatedAt) {
        await revokeSession(tx, session.id, now, 'refresh_token_reuse');
        return { kind: 'reused' as const, sessionId: session.id };
      }
      if (presented.expiresAt <= now || session.expiresAt <= now) return { kind: 'invalid' as const };
      const next = issueRefreshToken();
      await rotateRefreshToken(tx, {
        presented: presentedHash,
        next: next.hash,
        sessionId: session.id,
        at: now,
        expiresAt: new Date(now.getTime() + this.deps.refreshTtlSeconds * 1000),
      });
      return { kind: 'rotated' as const, user, sessionId: session.id, refreshToken: next.token };
    });
    if (outcome.kind === 'reused') {
      ctx.log.warn({ sessionId: outcome.sessionId }, 'refresh token reuse detected; session revoked');
      await this.deps.tokens.revokeSessions([outcome.sessionId]);
    }
    if (outcome.kind === 'suspended') throw accountSuspended(outcome.suspension);
    if (outcome.kind !== 'rotated') throw invalidRefreshToken();
    return this.tokenResponse(outcome.user, outcome.sessionId, outcome.refreshToken);
  }

  /** Revokes the session the token belongs to. Unknown tokens are accepted silently: logout is idempotent. */
  async logout(ctx: Ctx, refreshToken: string): Promise<void> {
    const sessionId = await sessionOfRefreshToken(ctx.data, hashToken(refreshToken));
    if (!sessionId) return;
    await revokeSession(ctx.data, sessionId, ctx.now(), 'logout');
    await this.deps.tokens.revokeSessions([sessionId]);
  }

  /** Ends every session of a user (used when the account is deleted). */
  async revokeAllSessions(ctx: Ctx, userId: string): Promise<void> {
    await this.deps.tokens.revokeSessions(await sessionIdsOf(ctx.data, userId));
  }

  private async startSession(
    ctx: Ctx,
    user: User,
    beforeIssue?: (sessionId: string) => Promise<void>,
  ): Promise<TokenResponse> {
    const now = ctx.now();
    const expiresAt = new Date(now.getTime() + this.deps.refreshTtlSeconds * 1000);
    const refresh = issueRefreshToken();
    const sessionId = newId();
    await writeSession(ctx.data, user.id, { sessionId, tokenHash: refresh.hash, createdAt: now, expiresAt });
    await beforeIssue?.(sessionId);
    return this.tokenResponse(user, sessionId, refresh.token);
  }

  private async tokenResponse(user: User, sessionId: string, refreshToken: string): Promise<TokenResponse> {
    const principal: AuthUser = { id: user.id, sessionId, roles: user.roles };
    return {
      user: { id: user.id, username: user.username, created_at: user.createdAt.toISOString() },
      access_token: await this.deps.tokens.issue(principal),
      refresh_token: refreshToken,
      token_type: 'Bearer',
      expires_in: this.deps.tokens.ttlSeconds,
    };
  }
}

/** The refusal of a suspended account's login or refresh: `until` says when it may sign in again. */
function accountSuspended(suspension: Suspension): AppError {
  const until = suspension.until?.toISOString() ?? null;
  return new AppError(
    ErrorCode.ACCOUNT_SUSPENDED,
    until === null ? 'This account is suspended.' : `This account is suspended until ${until}.`,
    { details: { until } },
  );
}

/** 256 random bits, sent to the client once; only the SHA-256 is stored. */
function issueRefreshToken(): { token: string; hash: Buffer } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token) };
}

function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The refusal of a registration a unique index refused, by the index's name. */
function uniqueViolationError(constraint: string): AppError {
  if (constraint.includes('users_email_folded_key')) {
    return new AppError(ErrorCode.EMAIL_TAKEN, 'That email address is already registered.');
  }
  return new AppError(ErrorCode.USERNAME_TAKEN, 'That username is taken.');
}
