import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { AccessTokens } from '../../src/platform/auth/access-tokens.js';
import { type KeyRing, loadKeyRing } from '../../src/platform/auth/keys.js';
import { type Kv, MemoryKv, RedisKv } from '../../src/platform/kv/index.js';

const REDIS_URL = process.env.REDIS_URL;
const REVOKED = ['session-3', 'session-8'];

/** Records the keys of every MGET the store is asked for, then lets it answer. */
function recordReads(kv: Kv): string[][] {
  const reads: string[][] = [];
  const mget = kv.mget.bind(kv);
  kv.mget = (keys) => {
    reads.push([...keys]);
    return mget(keys);
  };
  return reads;
}

/** Ten sessions' tokens verified at once, two of the sessions revoked: the reads made, by marks asked for. */
async function verifyTen(keys: KeyRing, kv: Kv): Promise<number[]> {
  const tokens = new AccessTokens({ keys, kv, issuer: 'atrium', ttlSeconds: 60 });
  const sessions = Array.from({ length: 10 }, (_, i) => `session-${i}`);
  const issued = await Promise.all(
    sessions.map((sessionId, i) =>
      tokens.issue({ id: `0190000${i}-0000-7000-8000-000000000001`, sessionId, roles: ['user'] }),
    ),
  );
  await tokens.revokeSessions(REVOKED);
  const reads = recordReads(kv);

  const outcomes = await Promise.allSettled(issued.map((token) => tokens.verify(token)));

  expect(outcomes.map((outcome) => outcome.status)).toEqual(
    sessions.map((sessionId) => (REVOKED.includes(sessionId) ? 'rejected' : 'fulfilled')),
  );
  expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual(
    REVOKED.map(() => ({ status: 'rejected', reason: expect.objectContaining({ code: 'UNAUTHENTICATED' }) })),
  );
  // Each read asks for the marker that the marks are whole, then the sessions' marks.
  return reads.map((keys) => keys.length - 1);
}

describe('revocation marks read for verifications made at once', () => {
  let dataDir: string;
  let keys: KeyRing;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'atrium-revocation-reads-'));
    keys = await loadKeyRing(configFrom({ DATA_DIR: dataDir }));
  });

  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('reads each session’s mark at once on the in-process store, each verification its own answer', async () => {
    const kv = new MemoryKv();
    try {
      expect(await verifyTen(keys, kv)).toEqual(Array.from({ length: 10 }, () => 1));
    } finally {
      await kv.close();
    }
  });

  it.skipIf(!REDIS_URL)(
    'shares a read on Redis among the verifications made while reads are out, each its own answer',
    async () => {
      const kv = await RedisKv.connect(REDIS_URL as string, { namespace: `test:${randomUUID()}:` });
      try {
        // Two reads may be out at once: the first two verifications read alone, the eight that
        // came meanwhile share the third.
        expect(await verifyTen(keys, kv)).toEqual([1, 1, 8]);
      } finally {
        await kv.del(...['auth:revoked-session:session-3', 'auth:revoked-session:session-8']);
        await kv.close();
      }
    },
  );
});
