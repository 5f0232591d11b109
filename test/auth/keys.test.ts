import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, decodeProtectedHeader, exportJWK } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { configFrom, StartupError } from '../../src/config.js';
import { AccessTokens, type AuthUser } from '../../src/platform/auth/access-tokens.js';
import {
  type CreatedKey,
  createSigningKey,
  type KeyRing,
  loadKeyRing,
} from '../../src/platform/auth/keys.js';
import { AppError } from '../../src/platform/errors.js';
import { MemoryKv } from '../../src/platform/kv/memory-kv.js';

const tempDirs: string[] = [];
const kvs: MemoryKv[] = [];

async function tempDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'atrium-keys-'));
  tempDirs.push(dir);
  return dir;
}

function memoryKv(): MemoryKv {
  const kv = new MemoryKv();
  kvs.push(kv);
  return kv;
}

afterEach(async () => {
  for (const kv of kvs.splice(0)) await kv.close();
  for (const dir of tempDirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

function rsaPem(bits = 2048): { privatePem: string; publicPem: string; publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privatePem: privateKey, publicPem: publicKey, publicKey: createPublicKey(publicKey) };
}

const modulusOf = (key: KeyObject) =>
  (key.type === 'public' ? key : createPublicKey(key)).export({ format: 'jwk' }).n;
const thumbprintOf = async (key: KeyObject) => calculateJwkThumbprint(await exportJWK(key));

async function keyFiles(dataDir: string): Promise<string[]> {
  try {
    return (await readdir(join(dataDir, 'keys'))).filter((name) => name.endsWith('.pem')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

const alice: AuthUser = { id: '01900000-0000-7000-8000-000000000001', sessionId: 'sess-1', roles: ['user'] };

function tokensOn(keys: KeyRing, now?: () => Date): AccessTokens {
  return new AccessTokens({
    keys,
    kv: memoryKv(),
    issuer: 'atrium',
    ttlSeconds: 60,
    ...(now ? { now } : {}),
  });
}

async function loadError(overrides: Parameters<typeof configFrom>[0]): Promise<unknown> {
  const dataDir = await tempDataDir();
  return loadKeyRing(configFrom({ DATA_DIR: dataDir, ...overrides })).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('development keys under DATA_DIR/keys', () => {
  it('generates one owner-only key file when none is configured and reports it once', async () => {
    const dataDir = await tempDataDir();
    const onGenerated = vi.fn<(key: CreatedKey) => void>();
    const ring = await loadKeyRing(configFrom({ DATA_DIR: dataDir }), onGenerated);

    const files = await keyFiles(dataDir);
    expect(files).toHaveLength(1);
    expect(onGenerated).toHaveBeenCalledTimes(1);
    const created = onGenerated.mock.calls[0]?.[0] as CreatedKey;
    expect(created.privateKeyPath).toBe(join(dataDir, 'keys', files[0] as string));
    expect(files[0]).toBe(`${created.kid}.pem`);
    expect(ring.signing.kid).toBe(created.kid);

    expect((await stat(created.privateKeyPath)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dataDir, 'keys'))).mode & 0o777).toBe(0o700);

    expect(ring.signing.privateKey.asymmetricKeyType).toBe('rsa');
    expect(ring.signing.privateKey.asymmetricKeyDetails?.modulusLength).toBeGreaterThanOrEqual(2048);
    expect([...ring.verification.keys()]).toEqual([created.kid]);
    expect(ring.jwks.map((k) => k.kid)).toEqual([created.kid]);
  });

  it('leaves only the finished key file behind when it generates one', async () => {
    const dataDir = await tempDataDir();
    const ring = await loadKeyRing(configFrom({ DATA_DIR: dataDir }));
    expect(await readdir(join(dataDir, 'keys'))).toEqual([`${ring.signing.kid}.pem`]);
  });

  it('ignores the temp file an interrupted write left behind and generates a key', async () => {
    const dataDir = await tempDataDir();
    await mkdir(join(dataDir, 'keys'), { recursive: true });
    await writeFile(join(dataDir, 'keys', 'k20260101000000000.pem.0a1b2c3d4e5f.tmp'), '-----BEGIN PRI');
    const ring = await loadKeyRing(configFrom({ DATA_DIR: dataDir }));
    expect(ring.signing.kid).not.toBe('k20260101000000000');
    expect(await keyFiles(dataDir)).toEqual([`${ring.signing.kid}.pem`]);
  });

  it('refuses an empty key file with a StartupError naming the file and the way out', async () => {
    const dataDir = await tempDataDir();
    await mkdir(join(dataDir, 'keys'), { recursive: true });
    const path = join(dataDir, 'keys', 'k20260101000000000.pem');
    await writeFile(path, '');
    const error = await loadKeyRing(configFrom({ DATA_DIR: dataDir })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toBe(
      `${path} is empty, probably cut short by a crash while it was written. Remove it; if it was the only key, a new one is generated at the next start.`,
    );
  });

  it('reuses the generated key on the next load instead of writing another', async () => {
    const dataDir = await tempDataDir();
    const config = configFrom({ DATA_DIR: dataDir });
    const first = await loadKeyRing(config);
    const onGenerated = vi.fn();
    const second = await loadKeyRing(config, onGenerated);

    expect(second.signing.kid).toBe(first.signing.kid);
    expect(modulusOf(second.signing.privateKey)).toBe(modulusOf(first.signing.privateKey));
    expect(onGenerated).not.toHaveBeenCalled();
    expect(await keyFiles(dataDir)).toEqual([`${first.signing.kid}.pem`]);
  });

  it('signs with the newest key file and keeps verifying with the older one (rotation)', async () => {
    const dataDir = await tempDataDir();
    const config = configFrom({ DATA_DIR: dataDir });
    const old = await loadKeyRing(config);
    const later = new Date(Date.now() + 24 * 3600 * 1000);
    const newer = await createSigningKey(dataDir, later);
    expect(newer.kid).not.toBe(old.signing.kid);

    const ring = await loadKeyRing(config);
    expect(ring.signing.kid).toBe(newer.kid);
    expect(await keyFiles(dataDir)).toHaveLength(2);
    expect(new Set(ring.verification.keys())).toEqual(new Set([old.signing.kid, newer.kid]));
    expect(new Set(ring.jwks.map((k) => k.kid))).toEqual(new Set([old.signing.kid, newer.kid]));
    const oldJwk = ring.jwks.find((k) => k.kid === old.signing.kid);
    expect(oldJwk?.n).toBe(modulusOf(old.signing.privateKey));
  });
});

describe('JWT_SIGNING_KEY_PEM', () => {
  it('signs with the configured key, named by its RFC 7638 thumbprint, and writes no key file', async () => {
    const dataDir = await tempDataDir();
    const { privatePem, publicKey } = rsaPem();
    const onGenerated = vi.fn();
    const ring = await loadKeyRing(
      configFrom({ DATA_DIR: dataDir, JWT_SIGNING_KEY_PEM: privatePem }),
      onGenerated,
    );

    const expectedKid = await thumbprintOf(publicKey);
    expect(ring.signing.kid).toBe(expectedKid);
    expect(modulusOf(ring.signing.privateKey)).toBe(modulusOf(publicKey));
    expect([...ring.verification.keys()]).toEqual([expectedKid]);
    expect(ring.jwks).toEqual([
      expect.objectContaining({
        kid: expectedKid,
        n: modulusOf(publicKey),
        alg: 'RS256',
        use: 'sig',
        kty: 'RSA',
      }),
    ]);
    expect(onGenerated).not.toHaveBeenCalled();
    expect(await keyFiles(dataDir)).toEqual([]);
  });

  it('uses JWT_SIGNING_KEY_ID as the kid when it is set', async () => {
    const dataDir = await tempDataDir();
    const { privatePem } = rsaPem();
    const ring = await loadKeyRing(
      configFrom({ DATA_DIR: dataDir, JWT_SIGNING_KEY_PEM: privatePem, JWT_SIGNING_KEY_ID: 'prod-2026-01' }),
    );
    expect(ring.signing.kid).toBe('prod-2026-01');
    expect(ring.jwks.map((k) => k.kid)).toEqual(['prod-2026-01']);
    expect(ring.verification.has('prod-2026-01')).toBe(true);
  });

  it('accepts a PEM whose newlines are written as \\n escapes, as a one-line env value carries them', async () => {
    const dataDir = await tempDataDir();
    const { privatePem, publicKey } = rsaPem();
    const oneLine = privatePem.trim().replaceAll('\n', '\\n');
    expect(oneLine).not.toContain('\n');
    const ring = await loadKeyRing(configFrom({ DATA_DIR: dataDir, JWT_SIGNING_KEY_PEM: oneLine }));
    expect(ring.signing.kid).toBe(await thumbprintOf(publicKey));
    expect(modulusOf(ring.signing.privateKey)).toBe(modulusOf(publicKey));
  });

  it('adds every public key of JWT_VERIFY_KEYS_PEM to verification and the JWKS while the private key signs', async () => {
    const dataDir = await tempDataDir();
    const signer = rsaPem();
    const retiredA = rsaPem();
    const retiredB = rsaPem();
    const ring = await loadKeyRing(
      configFrom({
        DATA_DIR: dataDir,
        JWT_SIGNING_KEY_PEM: signer.privatePem,
        JWT_VERIFY_KEYS_PEM: `${retiredA.publicPem}${retiredB.publicPem}`,
      }),
    );

    const signerKid = await thumbprintOf(signer.publicKey);
    const kidA = await thumbprintOf(retiredA.publicKey);
    const kidB = await thumbprintOf(retiredB.publicKey);
    expect(ring.signing.kid).toBe(signerKid);
    expect(modulusOf(ring.signing.privateKey)).toBe(modulusOf(signer.publicKey));
    expect(new Set(ring.verification.keys())).toEqual(new Set([signerKid, kidA, kidB]));
    expect(modulusOf(ring.verification.get(kidA) as KeyObject)).toBe(modulusOf(retiredA.publicKey));
    expect(modulusOf(ring.verification.get(kidB) as KeyObject)).toBe(modulusOf(retiredB.publicKey));
    expect(ring.jwks).toHaveLength(3);
    expect(new Set(ring.jwks.map((k) => k.n))).toEqual(
      new Set([signer.publicKey, retiredA.publicKey, retiredB.publicKey].map(modulusOf)),
    );
  });

  it('refuses a 1024-bit RSA key with a StartupError naming the variable', async () => {
    const { privatePem } = rsaPem(1024);
    const error = await loadError({ JWT_SIGNING_KEY_PEM: privatePem });
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toContain('JWT_SIGNING_KEY_PEM');
    expect((error as Error).message).not.toContain('PRIVATE KEY-----');
  });

  it('refuses an EC key with a StartupError naming the variable', async () => {
    const { privateKey } = generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    expect(privateKey).toContain('-----BEGIN PRIVATE KEY-----');
    const error = await loadError({ JWT_SIGNING_KEY_PEM: privateKey });
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toContain('JWT_SIGNING_KEY_PEM');
  });

  it('refuses a PEM with valid armour but a garbage body with a StartupError naming the variable', async () => {
    const garbage =
      '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5IGF0IGFsbA==!!garbage\n-----END PRIVATE KEY-----\n';
    const error = await loadError({ JWT_SIGNING_KEY_PEM: garbage });
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toContain('JWT_SIGNING_KEY_PEM');
  });

  it('refuses a garbage public key in JWT_VERIFY_KEYS_PEM with a StartupError naming the variable', async () => {
    const { privatePem } = rsaPem();
    const garbage =
      '-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5IGF0IGFsbA==!!garbage\n-----END PUBLIC KEY-----\n';
    const error = await loadError({ JWT_SIGNING_KEY_PEM: privatePem, JWT_VERIFY_KEYS_PEM: garbage });
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toContain('JWT_VERIFY_KEYS_PEM');
  });
});

describe('AccessTokens on a key ring', () => {
  it('still verifies a token signed by the retired key after a newer key took over signing', async () => {
    const dataDir = await tempDataDir();
    const config = configFrom({ DATA_DIR: dataDir });
    const oldRing = await loadKeyRing(config);
    const oldToken = await tokensOn(oldRing).issue(alice);
    expect(decodeProtectedHeader(oldToken).kid).toBe(oldRing.signing.kid);

    const newer = await createSigningKey(dataDir, new Date(Date.now() + 24 * 3600 * 1000));
    const newRing = await loadKeyRing(config);
    expect(newRing.signing.kid).toBe(newer.kid);
    const tokens = tokensOn(newRing);

    expect(await tokens.verify(oldToken)).toMatchObject(alice);
    const newToken = await tokens.issue(alice);
    expect(decodeProtectedHeader(newToken).kid).toBe(newer.kid);
    expect(await tokens.verify(newToken)).toMatchObject(alice);
  });

  it('refuses a token of a key that is no longer in the ring', async () => {
    const dataDir = await tempDataDir();
    const oldRing = await loadKeyRing(configFrom({ DATA_DIR: dataDir }));
    const oldToken = await tokensOn(oldRing).issue(alice);

    const newer = await createSigningKey(dataDir, new Date(Date.now() + 24 * 3600 * 1000));
    const onlyNewDir = await tempDataDir();
    await mkdir(join(onlyNewDir, 'keys'), { mode: 0o700 });
    await copyFile(newer.privateKeyPath, join(onlyNewDir, 'keys', `${newer.kid}.pem`));
    const onlyNew = await loadKeyRing(configFrom({ DATA_DIR: onlyNewDir }));
    expect([...onlyNew.verification.keys()]).toEqual([newer.kid]);

    const error = await tokensOn(onlyNew)
      .verify(oldToken)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('UNAUTHENTICATED');
  });

  it('accepts a token until its lifetime ends and refuses it as expired just after', async () => {
    const dataDir = await tempDataDir();
    const ring = await loadKeyRing(configFrom({ DATA_DIR: dataDir }));
    const issuedAt = Date.parse('2030-01-01T00:00:00.000Z');
    let nowMs = issuedAt;
    const tokens = tokensOn(ring, () => new Date(nowMs));
    const token = await tokens.issue(alice);

    nowMs = issuedAt + 59_000;
    expect(await tokens.verify(token)).toEqual({ ...alice, expiresAt: issuedAt + 60_000 });

    nowMs = issuedAt + 61_000;
    const error = await tokens.verify(token).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('UNAUTHENTICATED');
    expect((error as AppError).message).toMatch(/expired/i);
  });
});
