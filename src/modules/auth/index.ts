import { authLogin, authLogout, authRefresh, authRegister } from '../../../protocol/auth.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { UsersApi } from '../users/index.js';
import { authFrames } from './auth.frames.js';
import { AuthService } from './auth.service.js';
import { registerJwksRoute } from './jwks.routes.js';
import { argon2Passwords, type Passwords } from './password.js';

export { type Argon2Parameters, argon2Passwords, type Passwords } from './password.js';

import { recentSessionsOf, revokeSessionsOf } from './sessions.repository.js';

/** What other modules may use of accounts and sessions. */
export interface AuthApi {
  /** Ends every session of the user, on every node (account deletion). */
  revokeAllSessions: AuthService['revokeAllSessions'];
  verifyPassword: Passwords['verify'];
  /** Revokes the user's open sessions in the caller's transaction (suspension, admins); answers their ids. */
  revokeSessionsOf: typeof revokeSessionsOf;
  /** The user's most recent sessions, for the operator console. */
  recentSessionsOf: typeof recentSessionsOf;
}

export interface AuthModuleOptions {
  /** How passwords are hashed: argon2id with `ARGON2_PARAMETERS` unless a test builds it cheaper. */
  passwords?: Passwords;
}

/**
 * Accounts and sessions: registration, login, refresh-token rotation, logout, the gateway's auth
 * frame and the public key set that verifies access tokens.
 */
export const authModule = createAuthModule();

/** The auth module with other options than the service's (the test suite's cheap password hashing). */
export function createAuthModule({ passwords = argon2Passwords() }: AuthModuleOptions = {}) {
  return defineModule({
    name: 'auth',
    tables: ['sessions', 'refresh_tokens'],
    needs: ['users'],
    setup({ config, kv, tokens, gateway, keys, serviceTokens, outbox }, { users }: { users: UsersApi }) {
      const limiter = (keyPrefix: string, points: number, durationSeconds: number) =>
        createLimiter(kv, { keyPrefix, points, durationSeconds });
      const auth = new AuthService({
        tokens,
        passwords,
        users,
        refreshTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
        maxLoginFailures: config.LOGIN_MAX_FAILURES,
        loginFailuresByUsername: limiter(
          'login-fail',
          config.LOGIN_MAX_FAILURES,
          config.LOGIN_LOCKOUT_SECONDS,
        ),
        loginAttemptsByIp: limiter('login-ip', config.LOGIN_IP_MAX_ATTEMPTS, config.LOGIN_IP_WINDOW_SECONDS),
        registrationsByIp: limiter(
          'register-ip',
          config.REGISTER_IP_MAX_ATTEMPTS,
          config.REGISTER_IP_WINDOW_SECONDS,
        ),
        outbox,
      });
      const api: AuthApi = {
        revokeAllSessions: (ctx, userId) => auth.revokeAllSessions(ctx, userId),
        verifyPassword: passwords.verify,
        revokeSessionsOf,
        recentSessionsOf,
      };
      return {
        api,
        operations: [
          serve(authRegister, (ctx, input) => auth.register(ctx, input)),
          serve(authLogin, (ctx, input) => auth.login(ctx, input)),
          serve(authRefresh, (ctx, { refresh_token }) => auth.refresh(ctx, refresh_token)),
          serve(authLogout, (ctx, { refresh_token }) => auth.logout(ctx, refresh_token)),
          ...authFrames({ tokens, gateway, serviceTokens }),
        ],
        routes: (http) => registerJwksRoute(http, keys),
      };
    },
  });
}
