import {
  createPrivateKey,
  createPublicKey,
  generateKeyPair as generateKeyPairCb,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { link, mkdir, open, readdir, readFile, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { calculateJwkThumbprint, exportJWK } from 'jose';
import type { PlatformConfig } from '../platform-config.js';
import { StartupError } from '../startup-error.js';

const generateKeyPair = promisify(generateKeyPairCb);
const MIN_RSA_BITS = 2048;

export interface CreatedKey {
  kid: string;
  privateKeyPath: string;
}

/** The keys tokens are signed and verified with: one signs, every one listed verifies. */
export interface PublicJwk {
  kty: string;
  n: string;
  e: string;
  kid: string;
  alg: 'RS256';
  use: 'sig';
}

export interface KeyRing {
  signing: { kid: string; privateKey: KeyObject };
  verification: Map<string, KeyObject>;
  /** Public keys as served at /.well-known/jwks.json. */
  jwks: PublicJwk[];
}

/**
 * Creates an RS256 signing key pair under `<dataDir>/keys`, named by its key id. The private key
 * file is readable by the owner only (0600). Key ids sort by creation time, so the newest key in
 * the directory is the one that signs while older ones keep verifying tokens they signed.
 */
export async function createSigningKey(dataDir: string, now = new Date()): Promise<CreatedKey> {
  const { privateKey } = await generateKeyPair('rsa', {
    modulusLength: MIN_RSA_BITS,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const kid = `k${now.toISOString().replace(/[-:TZ.]/g, '')}`;
  const dir = join(dataDir, 'keys');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const privateKeyPath = join(dir, `${kid}.pem`);
  await writeFileAtomically(privateKeyPath, privateKey);
  return { kid, privateKeyPath };
}

/**
 * Writes a new owner-only file so that it appears whole or not at all: the bytes go to a temp
 * file (whose name does not end in .pem, so loading ignores it), are flushed to disk, and the
 * file is then linked under its final name, which fails rather than replace an existing key.
 * Written in place, a crash mid-write left an empty key file that stopped every later start.
 */
async function writeFileAtomically(path: string, contents: string): Promise<void> {
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const file = await open(temp, 'wx', 0o600);
  try {
    await file.writeFile(contents);
    await file.sync();
  } finally {
    await file.close();
  }
  try {
    await link(temp, path);
  } finally {
    await unlink(temp);
  }
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** The settings loadKeyRing reads. */
export type KeyRingSettings = Pick<
  PlatformConfig,
  'DATA_DIR' | 'JWT_SIGNING_KEY_PEM' | 'JWT_SIGNING_KEY_ID' | 'JWT_VERIFY_KEYS_PEM'
>;

/**
 * Production supplies the signing key as PEM in JWT_SIGNING_KEY_PEM (plus retired public keys in
 * JWT_VERIFY_KEYS_PEM during a rotation). Without it, keys live under DATA_DIR/keys and one is
 * generated on first start, which is what a laptop install wants.
 */
export async function loadKeyRing(
  config: KeyRingSettings,
  onGenerated?: (key: CreatedKey) => void,
): Promise<KeyRing> {
  const entries: { kid: string; privateKey?: KeyObject; publicKey: KeyObject }[] = [];
  if (config.JWT_SIGNING_KEY_PEM) {
    const privateKey = parsePrivateKey(config.JWT_SIGNING_KEY_PEM, 'JWT_SIGNING_KEY_PEM');
    const publicKey = createPublicKey(privateKey);
    entries.push({ kid: config.JWT_SIGNING_KEY_ID ?? (await thumbprint(publicKey)), privateKey, publicKey });
  } else {
    const dir = join(config.DATA_DIR, 'keys');
    let files = await pemFiles(dir);
    if (files.length === 0) {
      const created = await createSigningKey(config.DATA_DIR);
      onGenerated?.(created);
      files = await pemFiles(dir);
    }
    // Newest first: it signs.
    for (const file of files.sort().reverse()) {
      const privateKey = parsePrivateKey(await readFile(join(dir, file), 'utf8'), join(dir, file));
      entries.push({
        kid: file.slice(0, -'.pem'.length),
        privateKey,
        publicKey: createPublicKey(privateKey),
      });
    }
  }
  for (const block of config.JWT_VERIFY_KEYS_PEM?.match(
    /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g,
  ) ?? []) {
    const publicKey = parsePublicKey(block, 'JWT_VERIFY_KEYS_PEM');
    entries.push({ kid: await thumbprint(publicKey), publicKey });
  }
  const [signer] = entries;
  if (!signer?.privateKey) throw new StartupError('No RS256 signing key is configured.');
  const verification = new Map(entries.map((e) => [e.kid, e.publicKey]));
  const jwks = await Promise.all(
    [...verification].map(async ([kid, key]): Promise<PublicJwk> => {
      const { kty = 'RSA', n = '', e = '' } = await exportJWK(key);
      return { kty, n, e, kid, alg: 'RS256', use: 'sig' };
    }),
  );
  return { signing: { kid: signer.kid, privateKey: signer.privateKey }, verification, jwks };
}

async function pemFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((name) => name.endsWith('.pem'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

function parsePrivateKey(pem: string, source: string): KeyObject {
  if (pem.trim() === '') {
    throw new StartupError(
      `${source} is empty, probably cut short by a crash while it was written. Remove it; if it was the only key, a new one is generated at the next start.`,
    );
  }
  try {
    return checkRsa(createPrivateKey(pem), source);
  } catch (error) {
    if (error instanceof StartupError) throw error;
    throw new StartupError(`${source} is not a readable PKCS#8 PEM private key.`);
  }
}

function parsePublicKey(pem: string, source: string): KeyObject {
  try {
    return checkRsa(createPublicKey(pem), source);
  } catch (error) {
    if (error instanceof StartupError) throw error;
    throw new StartupError(`${source} is not a readable SPKI PEM public key.`);
  }
}

function checkRsa(key: KeyObject, source: string): KeyObject {
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (key.asymmetricKeyType !== 'rsa' || bits < MIN_RSA_BITS) {
    throw new StartupError(`${source} must be an RSA key of at least ${MIN_RSA_BITS} bits for RS256.`);
  }
  return key;
}

async function thumbprint(publicKey: KeyObject): Promise<string> {
  return calculateJwkThumbprint(await exportJWK(publicKey));
}
