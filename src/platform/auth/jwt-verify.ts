import { type KeyObject, verify } from 'node:crypto';

/**
 * Synchronous verification of this service's compact RS256 JWTs (RFC 7515 / 7519) with
 * node:crypto. jose's jwtVerify goes through WebCrypto: a thread-pool job and a chain of promises
 * per token, which during a burst of socket authentications made about 9 KiB of short-lived
 * objects per token and kept them alive across garbage collections. Signing stays with jose.
 *
 * Only what this service issues is accepted: a JWS header naming alg RS256 and a known kid, no
 * `crit` extensions, a signature that verifies over the first two segments, and a JSON object
 * payload whose iss, aud, exp (required), nbf and iat pass.
 */

export type JwtFailure = 'expired' | 'invalid';

export class JwtRejected extends Error {
  constructor(readonly reason: JwtFailure) {
    super(reason === 'expired' ? 'the token has expired' : 'the token is invalid');
  }
}

export interface JwtExpectations {
  /** The verification key for a header's kid, or undefined when none is known. */
  keyFor(kid: string): KeyObject | undefined;
  issuer: string;
  audience: string;
  /** Seconds since the epoch. */
  nowSeconds: number;
}

/** Buffer.from(…, 'base64url') skips characters outside the alphabet; a token must not carry any. */
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Returns the verified claims, or throws JwtRejected. */
export function verifyRs256Jwt(token: string, expect: JwtExpectations): Record<string, unknown> {
  const segments = token.split('.');
  if (segments.length !== 3) throw new JwtRejected('invalid');
  const [encodedHeader, encodedPayload, encodedSignature] = segments as [string, string, string];
  if (!segments.every((segment) => BASE64URL.test(segment))) throw new JwtRejected('invalid');

  const header = decodeJsonObject(encodedHeader);
  if (header.alg !== 'RS256' || header.crit !== undefined || typeof header.kid !== 'string')
    throw new JwtRejected('invalid');
  const key = expect.keyFor(header.kid);
  if (!key) throw new JwtRejected('invalid');
  if (!signatureVerifies(`${encodedHeader}.${encodedPayload}`, encodedSignature, key))
    throw new JwtRejected('invalid');

  const claims = decodeJsonObject(encodedPayload);
  const { iss, aud, exp, nbf, iat } = claims;
  if (iss !== expect.issuer) throw new JwtRejected('invalid');
  if (!(aud === expect.audience || (Array.isArray(aud) && aud.includes(expect.audience))))
    throw new JwtRejected('invalid');
  if (!isNumericDate(exp) || (nbf !== undefined && !isNumericDate(nbf))) throw new JwtRejected('invalid');
  if (iat !== undefined && !isNumericDate(iat)) throw new JwtRejected('invalid');
  if (nbf !== undefined && nbf > expect.nowSeconds) throw new JwtRejected('invalid');
  if (exp <= expect.nowSeconds) throw new JwtRejected('expired');
  return claims;
}

/** RSASSA-PKCS1-v1_5 with SHA-256; a key or signature node:crypto cannot use is a failed check. */
function signatureVerifies(signingInput: string, encodedSignature: string, key: KeyObject): boolean {
  try {
    return verify(
      'sha256',
      Buffer.from(signingInput, 'ascii'),
      key,
      Buffer.from(encodedSignature, 'base64url'),
    );
  } catch {
    return false;
  }
}

function decodeJsonObject(segment: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    throw new JwtRejected('invalid');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new JwtRejected('invalid');
  return value as Record<string, unknown>;
}

function isNumericDate(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}
