import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { type JwtExpectations, JwtRejected, verifyRs256Jwt } from '../../src/platform/auth/jwt-verify.js';

const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const { privateKey, publicKey } = rsa();
const other = rsa();
const NOW = 1_800_000_000;
const KID = 'k1';

const expectations: JwtExpectations = {
  keyFor: (kid) => (kid === KID ? publicKey : undefined),
  issuer: 'atrium',
  audience: 'atrium-api',
  nowSeconds: NOW,
};

const claims = {
  sub: 'u1',
  sid: 's1',
  roles: ['user'],
  iss: 'atrium',
  aud: 'atrium-api',
  iat: NOW - 10,
  exp: NOW + 600,
};
const b64url = (value: unknown) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** A compact JWS over any header and payload, signed RS256 by hand (no library checks in the way). */
function craft(header: unknown, payload: unknown, key: KeyObject = privateKey): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

const good = (payload: Record<string, unknown> = claims) =>
  craft({ alg: 'RS256', kid: KID, typ: 'JWT' }, payload);

function rejection(token: string): string {
  try {
    verifyRs256Jwt(token, expectations);
  } catch (error) {
    if (error instanceof JwtRejected) return error.reason;
    throw error;
  }
  return 'accepted';
}

describe('RS256 JWT verification', () => {
  it('accepts a token a standard JOSE library signed, and returns its claims', async () => {
    const token = await new SignJWT({ sid: 's1', roles: ['user'] })
      .setProtectedHeader({ alg: 'RS256', kid: KID, typ: 'JWT' })
      .setSubject('u1')
      .setIssuer('atrium')
      .setAudience('atrium-api')
      .setIssuedAt(NOW - 10)
      .setExpirationTime(NOW + 600)
      .sign(privateKey);
    expect(verifyRs256Jwt(token, expectations)).toEqual(claims);
  });

  it('accepts an audience array that contains the audience', () => {
    expect(rejection(good({ ...claims, aud: ['other', 'atrium-api'] }))).toBe('accepted');
  });

  it('calls a token expired at its exp second and after, and accepts it the second before', () => {
    expect(rejection(good({ ...claims, exp: NOW }))).toBe('expired');
    expect(rejection(good({ ...claims, exp: NOW - 1 }))).toBe('expired');
    expect(rejection(good({ ...claims, exp: NOW + 1 }))).toBe('accepted');
  });

  it('refuses a token without a numeric exp', () => {
    const { exp: _, ...noExp } = claims;
    expect(rejection(good(noExp))).toBe('invalid');
    expect(rejection(good({ ...claims, exp: String(NOW + 600) }))).toBe('invalid');
  });

  it('refuses a token not valid before a later second, and accepts it from that second', () => {
    expect(rejection(good({ ...claims, nbf: NOW + 1 }))).toBe('invalid');
    expect(rejection(good({ ...claims, nbf: NOW }))).toBe('accepted');
  });

  it('refuses a non-numeric iat', () => {
    expect(rejection(good({ ...claims, iat: 'yesterday' }))).toBe('invalid');
  });

  it('refuses the wrong issuer or audience', () => {
    expect(rejection(good({ ...claims, iss: 'someone-else' }))).toBe('invalid');
    expect(rejection(good({ ...claims, aud: 'other-api' }))).toBe('invalid');
    expect(rejection(good({ ...claims, aud: ['other-api'] }))).toBe('invalid');
  });

  it('refuses any algorithm but RS256, alg none included', () => {
    expect(rejection(craft({ alg: 'RS512', kid: KID }, claims))).toBe('invalid');
    expect(rejection(`${b64url({ alg: 'none', kid: KID })}.${b64url(claims)}.`)).toBe('invalid');
  });

  it('refuses a header with critical extensions it does not know', () => {
    expect(rejection(craft({ alg: 'RS256', kid: KID, crit: ['exp'], exp: NOW + 600 }, claims))).toBe(
      'invalid',
    );
  });

  it('refuses an unknown or missing kid, and a signature by another key under the real kid', () => {
    expect(rejection(craft({ alg: 'RS256', kid: 'k2' }, claims))).toBe('invalid');
    expect(rejection(craft({ alg: 'RS256' }, claims))).toBe('invalid');
    expect(rejection(craft({ alg: 'RS256', kid: KID }, claims, other.privateKey))).toBe('invalid');
  });

  it('refuses a valid signature moved onto other claims', () => {
    const [header, , signature] = good().split('.');
    expect(rejection(`${header}.${b64url({ ...claims, roles: ['admin'] })}.${signature}`)).toBe('invalid');
  });

  it('refuses characters outside base64url that a lenient decoder would skip', () => {
    const token = good();
    expect(rejection(`${token}=`)).toBe('invalid');
    expect(rejection(token.replace('.', '.!'))).toBe('invalid');
    expect(rejection(token.replace(/\.([^.]*)$/, '.\n$1'))).toBe('invalid');
  });

  it('refuses headers and payloads that are not JSON objects', () => {
    expect(rejection(craft([], claims))).toBe('invalid');
    expect(rejection(craft({ alg: 'RS256', kid: KID }, [claims]))).toBe('invalid');
    expect(rejection(craft({ alg: 'RS256', kid: KID }, 'not json'))).toBe('invalid');
    expect(rejection(craft({ alg: 'RS256', kid: KID }, null))).toBe('invalid');
  });

  it('refuses anything that is not three segments, and a truncated signature', () => {
    const token = good();
    expect(rejection(token.split('.').slice(0, 2).join('.'))).toBe('invalid');
    expect(rejection(`${token}.extra`)).toBe('invalid');
    expect(rejection('')).toBe('invalid');
    expect(rejection(token.slice(0, -10))).toBe('invalid');
  });
});
