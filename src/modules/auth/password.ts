import { type Algorithm, hash, verify } from '@node-rs/argon2';

/** `Algorithm.Argon2id`; the package's enum is a const enum, which isolated modules cannot read. */
const ARGON2ID = 2 as Algorithm;

export interface Argon2Parameters {
  memoryCost: number;
  timeCost: number;
  parallelism: number;
}

/**
 * argon2id with m = 19 MiB, t = 2, p = 1: the first of OWASP's Password Storage Cheat Sheet
 * recommended configurations. Hashing runs on libuv's thread pool, so the event loop stays free.
 */
export const ARGON2_PARAMETERS: Argon2Parameters = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** How accounts' passwords are hashed and checked. */
export interface Passwords {
  hash(password: string): Promise<string>;
  /**
   * Whether `password` matches `storedHash`. With no stored hash (unknown user) it still runs a
   * full verification against a fixed hash and returns false, so a wrong username costs the same
   * time as a wrong password and response timing does not reveal which usernames exist.
   */
  verify(storedHash: string | undefined, password: string): Promise<boolean>;
}

/**
 * argon2id passwords. The service always uses `ARGON2_PARAMETERS`; there is deliberately no
 * setting to weaken them. Only code that builds the app itself (the test suite, which registers
 * thousands of accounts) passes cheaper ones through the auth module's factory.
 */
export function argon2Passwords(parameters: Argon2Parameters = ARGON2_PARAMETERS): Passwords {
  const options = { algorithm: ARGON2ID, ...parameters };
  const hashPassword = (password: string) => hash(password, options);
  let dummyHash: Promise<string> | undefined;
  return {
    hash: hashPassword,
    async verify(storedHash, password) {
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
    },
  };
}
