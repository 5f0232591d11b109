import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  type JsonWebKey,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  generateKeyPair,
  type JSONWebKeySet,
  jwtVerify,
  SignJWT,
} from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../helpers/app.js';

interface Registered {
  user: { id: string; username: string; created_at: string };
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
}

interface Jwk {
  kty: string;
  kid: string;
  alg: string;
  use: string;
  n: string;
  e: string;
  [member: string]: unknown;
}

const b64urlJson = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('access tokens on the REST API', () => {
  const app = useTestApp();
  let registered: Registered;
  let token: string;
  let jwks: { keys: Jwk[] };
  /** The service's real signing key, read from DATA_DIR/keys like an attacker with disk access would. */
  let realPrivateKey: KeyObject;
  let realKid: string;

  const register = async (): Promise<Registered> => {
    const username = `u_${randomBytes(6).toString('hex')}`;
    const response = await app().http.inject({
      method: 'POST',
      url: '/api/auth/register',
      payload: { username, password: 'correct horse battery', accept_terms: true, confirm_18_plus: true },
    });
    expect(response.statusCode).toBe(201);
    return response.json<Registered>();
  };

  const me = (authorization?: string) =>
    app().http.inject({
      method: 'GET',
      url: '/api/users/me',
      headers: authorization === undefined ? {} : { authorization },
    });

  /** 401 problem+json with code UNAUTHENTICATED, and the presented credential is not echoed back. */
  const expectUnauthenticated = (response: LightMyRequestResponse, presented?: string) => {
    expect(response.statusCode).toBe(401);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = response.json<{ status: number; code: string; title: string; detail: string }>();
    expect(body.status).toBe(401);
    expect(body.code).toBe('UNAUTHENTICATED');
    expect(typeof body.detail).toBe('string');
    if (presented) {
      expect(response.body).not.toContain(presented);
      for (const part of presented.split('.').filter((p) => p.length > 8)) {
        expect(response.body).not.toContain(part);
      }
    }
  };

  /** Signs claims like the real token's, with any of them replaced. */
  const signLike = async (
    key: Parameters<SignJWT['sign']>[0],
    kid: string,
    overrides: { iss?: string; aud?: string; roles?: unknown; iat?: number; exp?: number } = {},
  ) => {
    const claims = decodeJwt(token);
    return new SignJWT({ sid: claims.sid, roles: overrides.roles ?? claims.roles })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
      .setSubject(claims.sub as string)
      .setIssuer(overrides.iss ?? (claims.iss as string))
      .setAudience(overrides.aud ?? (claims.aud as string))
      .setIssuedAt(overrides.iat ?? (claims.iat as number))
      .setExpirationTime(overrides.exp ?? (claims.exp as number))
      .sign(key);
  };

  beforeAll(async () => {
    registered = await register();
    token = registered.access_token;
    const jwksResponse = await app().http.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    expect(jwksResponse.statusCode).toBe(200);
    jwks = jwksResponse.json<{ keys: Jwk[] }>();
    const keyDir = join(app().config.DATA_DIR, 'keys');
    const pemFiles = (await readdir(keyDir)).filter((name) => name.endsWith('.pem'));
    expect(pemFiles).toHaveLength(1);
    const file = pemFiles[0] as string;
    realPrivateKey = createPrivateKey(await readFile(join(keyDir, file), 'utf8'));
    realKid = file.slice(0, -'.pem'.length);
  });

  describe('accepted tokens', () => {
    it('accepts the access token from registration and answers with that user', async () => {
      const response = await me(`Bearer ${token}`);
      expect(response.statusCode).toBe(200);
      const body = response.json<{ id: string; username: string; roles: string[] }>();
      expect(body.id).toBe(registered.user.id);
      expect(body.username).toBe(registered.user.username);
      expect(body.roles).toEqual(['user']);
    });

    it('accepts a token signed with the real key and the real claims (the control for the forgeries)', async () => {
      expect(decodeProtectedHeader(token).kid).toBe(realKid);
      const now = Math.floor(Date.now() / 1000);
      const selfSigned = await signLike(realPrivateKey, realKid, { iat: now, exp: now + 300 });
      const response = await me(`Bearer ${selfSigned}`);
      expect(response.statusCode).toBe(200);
      expect(response.json<{ id: string }>().id).toBe(registered.user.id);
    });
  });

  describe('missing or malformed credentials', () => {
    it('answers 401 UNAUTHENTICATED problem+json when the Authorization header is missing', async () => {
      expectUnauthenticated(await me());
    });

    it('answers 401 UNAUTHENTICATED to a Basic credential', async () => {
      expectUnauthenticated(await me('Basic dXNlcjpwYXNzd29yZA=='));
    });

    it('answers 401 UNAUTHENTICATED to the real token under the Basic scheme', async () => {
      expectUnauthenticated(await me(`Basic ${token}`), token);
    });

    it('answers 401 UNAUTHENTICATED to a bearer token that is not a JWT', async () => {
      const garbage = 'not-a-jwt-at-all-but-long-enough';
      expectUnauthenticated(await me(`Bearer ${garbage}`), garbage);
    });

    it('answers 401 UNAUTHENTICATED to a bearer token of three garbage segments', async () => {
      const garbage = 'eyJnYXJiYWdlIjp0cnVl.bm90IGpzb24gYXQgYWxs.c2lnbmF0dXJlLWJ5dGVz';
      expectUnauthenticated(await me(`Bearer ${garbage}`), garbage);
    });
  });

  describe('forged tokens', () => {
    it('refuses an unsigned alg:none token carrying the real claims', async () => {
      const [, payload] = token.split('.');
      const forged = `${b64urlJson({ alg: 'none', typ: 'JWT' })}.${payload}.`;
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it('refuses an HS256 token whose HMAC secret is the public key PEM from the JWKS', async () => {
      const jwk = jwks.keys.find((k) => k.kid === realKid);
      expect(jwk).toBeDefined();
      const publicPem = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' })
        .export({ type: 'spki', format: 'pem' })
        .toString();
      expect(publicPem).toContain('-----BEGIN PUBLIC KEY-----');
      const [, payload] = token.split('.');
      const signingInput = `${b64urlJson({ alg: 'HS256', typ: 'JWT', kid: realKid })}.${payload}`;
      const signature = createHmac('sha256', publicPem).update(signingInput).digest('base64url');
      const forged = `${signingInput}.${signature}`;
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it('refuses the real token with one bit of its signature flipped', async () => {
      const [header, payload, signature] = token.split('.') as [string, string, string];
      const bytes = Buffer.from(signature, 'base64url');
      const index = Math.floor(bytes.length / 2);
      bytes[index] = (bytes[index] as number) ^ 0x01;
      const forged = `${header}.${payload}.${bytes.toString('base64url')}`;
      expect(forged).not.toBe(token);
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it("refuses a token that reuses an accepted token's signature over altered claims", async () => {
      // The accepted token is in the verified-token cache, which is keyed by the signature's end.
      expect((await me(`Bearer ${token}`)).statusCode).toBe(200);
      const [header, , signature] = token.split('.') as [string, string, string];
      const claims = { ...decodeJwt(token), roles: ['admin'] };
      const forged = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
      expect(forged.slice(-32)).toBe(token.slice(-32));
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it('refuses a token signed by an unknown key under an unknown kid', async () => {
      const { privateKey } = await generateKeyPair('RS256');
      const forged = await signLike(privateKey, 'k-unknown');
      expect(decodeJwt(forged).iss).toBe('atrium');
      expect(decodeJwt(forged).aud).toBe('atrium-api');
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it('refuses a token signed by a different RSA key that claims the real kid', async () => {
      const { privateKey } = await generateKeyPair('RS256');
      const forged = await signLike(privateKey, realKid);
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it('refuses an expired token even when the real key signed it', async () => {
      const now = Math.floor(Date.now() / 1000);
      const expired = await signLike(realPrivateKey, realKid, { iat: now - 1000, exp: now - 100 });
      expectUnauthenticated(await me(`Bearer ${expired}`), expired);
    });

    it('refuses a token from the wrong issuer even when the real key signed it', async () => {
      const forged = await signLike(realPrivateKey, realKid, { iss: 'not-atrium' });
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it('refuses a token for the wrong audience even when the real key signed it', async () => {
      const forged = await signLike(realPrivateKey, realKid, { aud: 'some-other-api' });
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it('refuses a token whose roles claim contains an unknown role even when the real key signed it', async () => {
      const forged = await signLike(realPrivateKey, realKid, { roles: ['user', 'superuser'] });
      expectUnauthenticated(await me(`Bearer ${forged}`), forged);
    });

    it('never echoes the presented token in the problem body', async () => {
      const now = Math.floor(Date.now() / 1000);
      const expired = await signLike(realPrivateKey, realKid, { iat: now - 1000, exp: now - 100 });
      const response = await me(`Bearer ${expired}`);
      expect(response.statusCode).toBe(401);
      const [header, payload, signature] = expired.split('.') as [string, string, string];
      for (const part of [expired, header, payload, signature]) expect(response.body).not.toContain(part);
      const body = response.json<Record<string, unknown>>();
      expect(Object.keys(body).sort()).toEqual(['code', 'detail', 'status', 'title', 'type']);
    });
  });

  describe('JWKS', () => {
    it('lists RS256 signature keys with kid, kty, n and e and no private members', () => {
      expect(jwks.keys.length).toBeGreaterThanOrEqual(1);
      for (const key of jwks.keys) {
        expect(key).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
        expect(key.kid).toMatch(/.+/);
        expect(key.n).toMatch(/^[A-Za-z0-9_-]{300,}$/);
        expect(key.e).toBe('AQAB');
        for (const privateMember of ['d', 'p', 'q', 'dp', 'dq', 'qi'])
          expect(key).not.toHaveProperty(privateMember);
      }
    });

    it("includes the access token's kid", () => {
      const { kid } = decodeProtectedHeader(token);
      expect(jwks.keys.map((k) => k.kid)).toContain(kid);
    });

    it('verifies an access token with a standard JOSE library against the published JWKS', async () => {
      const keySet = createLocalJWKSet(jwks as JSONWebKeySet);
      const { payload, protectedHeader } = await jwtVerify(token, keySet, {
        algorithms: ['RS256'],
        issuer: 'atrium',
        audience: 'atrium-api',
      });
      expect(payload.sub).toBe(registered.user.id);
      expect(protectedHeader.alg).toBe('RS256');
    });
  });

  describe('claims', () => {
    it('carries sub, sid, roles and a lifetime of ACCESS_TOKEN_TTL_SECONDS, signed RS256 under a kid', () => {
      const claims = decodeJwt(token);
      expect(claims.sub).toBe(registered.user.id);
      expect(typeof claims.sid).toBe('string');
      expect((claims.sid as string).length).toBeGreaterThan(0);
      expect(claims.roles).toEqual(['user']);
      expect(claims.iss).toBe('atrium');
      expect(claims.aud).toBe('atrium-api');
      expect(app().config.ACCESS_TOKEN_TTL_SECONDS).toBe(900);
      expect((claims.exp as number) - (claims.iat as number)).toBe(900);
      const header = decodeProtectedHeader(token);
      expect(header.alg).toBe('RS256');
      expect(header.kid).toBe(app().keys.signing.kid);
    });

    it('reports expires_in equal to the token lifetime', () => {
      expect(registered.expires_in).toBe(900);
      expect(registered.token_type).toBe('Bearer');
    });
  });

  describe('logout', () => {
    it("makes the session's unexpired access token answer 401 at once, and leaves other sessions working", async () => {
      const session = await register();
      const login = await app().http.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: { username: session.user.username, password: 'correct horse battery' },
      });
      expect(login.statusCode).toBe(200);
      const otherSession = login.json<Registered>();
      expect(decodeJwt(otherSession.access_token).sid).not.toBe(decodeJwt(session.access_token).sid);

      expect((await me(`Bearer ${session.access_token}`)).statusCode).toBe(200);
      const logout = await app().http.inject({
        method: 'POST',
        url: '/api/auth/logout',
        payload: { refresh_token: session.refresh_token },
      });
      expect(logout.statusCode).toBe(204);
      expect((decodeJwt(session.access_token).exp as number) * 1000).toBeGreaterThan(Date.now());
      expectUnauthenticated(await me(`Bearer ${session.access_token}`), session.access_token);

      const stillIn = await me(`Bearer ${otherSession.access_token}`);
      expect(stillIn.statusCode).toBe(200);
      expect(stillIn.json<{ id: string }>().id).toBe(session.user.id);
    });
  });
});
