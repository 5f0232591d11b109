import { generateKeyPair as generateKeyPairCb } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const generateKeyPair = promisify(generateKeyPairCb);

export interface CreatedKey {
  kid: string;
  privateKeyPath: string;
}

/**
 * Creates an RS256 signing key pair under `<dataDir>/keys`, named by its key id. The private key
 * file is readable by the owner only (0600). Production deployments may instead supply PEM
 * through the environment; several keys may be active at once so rotation never logs users out.
 */
export async function createSigningKey(dataDir: string, now = new Date()): Promise<CreatedKey> {
  const { privateKey } = await generateKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const kid = `k${now.toISOString().slice(0, 19).replace(/[-:T]/g, '')}`;
  const dir = join(dataDir, 'keys');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const privateKeyPath = join(dir, `${kid}.pem`);
  await writeFile(privateKeyPath, privateKey, { mode: 0o600, flag: 'wx' });
  return { kid, privateKeyPath };
}
