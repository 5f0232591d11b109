import { describe, expect, it } from 'vitest';
import type { AuthUser, Role } from '../../src/platform/auth/access-tokens.js';
import { type Ctx, hasRole, requireRole } from '../../src/platform/context.js';
import { AppError } from '../../src/platform/errors.js';

const userWith = (...roles: Role[]): AuthUser => ({ id: 'u1', sessionId: 's1', roles }) as AuthUser;
const ctxOf = (user: AuthUser | null) => ({ user }) as Ctx;

describe('staff roles', () => {
  it('ranks admin above moderator above user', () => {
    expect(hasRole(userWith('user', 'admin'), 'moderator')).toBe(true);
    expect(hasRole(userWith('user', 'moderator'), 'moderator')).toBe(true);
    expect(hasRole(userWith('user', 'moderator'), 'admin')).toBe(false);
    expect(hasRole(userWith('user'), 'moderator')).toBe(false);
  });

  it('answers the caller who holds the role or one above it', () => {
    const admin = userWith('user', 'admin');
    expect(requireRole(ctxOf(admin), 'moderator')).toBe(admin);
    expect(requireRole(ctxOf(admin), 'admin')).toBe(admin);
  });

  it('refuses a caller below the role with FORBIDDEN and the given wording', () => {
    const refusal = (() => {
      try {
        requireRole(ctxOf(userWith('user', 'moderator')), 'admin', 'Only admins read the configuration.');
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(AppError);
    expect(refusal).toMatchObject({ code: 'FORBIDDEN', message: 'Only admins read the configuration.' });
  });

  it('refuses an anonymous caller with UNAUTHENTICATED', () => {
    expect(() => requireRole(ctxOf(null), 'moderator')).toThrow(
      expect.objectContaining({ code: 'UNAUTHENTICATED' }),
    );
  });
});
