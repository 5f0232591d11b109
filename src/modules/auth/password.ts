import { type Algorithm, hash, verify } from '@node-rs/argon2';

/** `Algorithm.Argon2id`; the package's enum is a const enum, which isolated modules cannot read. */
const ARGON2ID = 2 as Algorithm;

/**
 * argon2id with m = 19 MiB, t = 2, p = 1: the first of OWASP's Password Storage Cheat Sheet
 * recommended configurations. Hashing runs on libuv's thread pool, so the event loop stays free.
 */
export const ARGON2_PARAMETERS = {
  algorithm: ARGON2ID,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_PARAMETERS);
}

let dummyHash: Promise<string> | undefined;

/**
 * Verifies `password` against `storedHash`. With no stored hash (unknown user) it still runs a
 * full verification against a fixed hash and returns false, so a wrong username costs the same
 * time as a wrong password and response timing does not reveal which usernames exist.
 */
export async function verifyPassword(storedHash: string | undefined, password: string): Promise<boolean> {
  if (storedHash === undefined) {
    dummyHash ??= hashPassword('atrium-timing-equalizer');
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  try {
    return await verify(storedHash, password);
  } catch {
    return false;
  }
}
