import { createHash, randomBytes } from 'node:crypto';
import { GAME_SERVER_TOKEN_PREFIX as PREFIX } from '../../platform/auth/game-server-auth.js';

/**
 * Per-spawn tokens: 256 random bits, shown once (in the launch arguments) and stored as their
 * SHA-256. A lookup by hash needs no constant-time compare: finding a row means knowing a
 * preimage. The `gs_` prefix keeps them apart from user access tokens (JWTs).
 */

export function newServerToken(): { token: string; hash: Buffer } {
  const token = PREFIX + randomBytes(32).toString('base64url');
  return { token, hash: hashServerToken(token) };
}

export function hashServerToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Whether a bearer credential is shaped like a server token (43 base64url characters after the prefix). */
export function looksLikeServerToken(token: string): boolean {
  return (
    token.length === PREFIX.length + 43 && token.startsWith(PREFIX) && /^[A-Za-z0-9_-]+$/.test(token.slice(3))
  );
}
