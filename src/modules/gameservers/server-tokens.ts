import { createHash, randomBytes } from 'node:crypto';

/**
 * Per-spawn tokens: 256 random bits, shown once (in the launch arguments) and stored as their
 * SHA-256. A lookup by hash needs no constant-time compare: finding a row means knowing a
 * preimage. The `gs_` prefix keeps them apart from user access tokens (JWTs, `eyJ...`).
 */

export const SERVER_TOKEN_PREFIX = 'gs_';

export function newServerToken(): { token: string; hash: Buffer } {
  const token = SERVER_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, hash: hashServerToken(token) };
}

export function hashServerToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Whether a bearer credential is shaped like a server token (43 base64url characters after the prefix). */
export function looksLikeServerToken(token: string): boolean {
  return (
    token.length === SERVER_TOKEN_PREFIX.length + 43 &&
    token.startsWith(SERVER_TOKEN_PREFIX) &&
    /^[A-Za-z0-9_-]+$/.test(token.slice(SERVER_TOKEN_PREFIX.length))
  );
}
