import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { AccessTokens } from '../../src/platform/auth/access-tokens.js';
import { loadKeyRing } from '../../src/platform/auth/keys.js';
import { MemoryKv } from '../../src/platform/kv/memory-kv.js';

/** The in-process store, counting the MGETs made of it. */
class CountingKv extends MemoryKv {
  readonly reads: string[][] = [];
  override mget(keys: readonly string[]): Promise<(string | null)[]> {
    this.reads.push([...keys]);
    return super.mget(keys);
  }
}

describe('revocation marks read for many verifications at once', () => {
  let dataDir: string;
  let kv: CountingKv;
  let tokens: AccessTokens;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'atrium-revocation-reads-'));
    kv = new CountingKv();
    const keys = await loadKeyRing(configFrom({ DATA_DIR: dataDir }));
    tokens = new AccessTokens({ keys, kv, issuer: 'atrium', ttlSeconds: 60 });
  });

  afterAll(async () => {
    await kv.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('verifications made while reads are out share the next read, and each gets its own session’s answer', async () => {
    const sessions = Array.from({ length: 10 }, (_, i) => `session-${i}`);
    const issued = await Promise.all(
      sessions.map((sessionId, i) =>
        tokens.issue({ id: `0190000${i}-0000-7000-8000-000000000001`, sessionId, roles: ['user'] }),
      ),
    );
    await tokens.revokeSessions(['session-3', 'session-8']);
    kv.reads.length = 0;

    const outcomes = await Promise.allSettled(issued.map((token) => tokens.verify(token)));

    expect(outcomes.map((outcome) => outcome.status)).toEqual(
      sessions.map((sessionId) =>
        ['session-3', 'session-8'].includes(sessionId) ? 'rejected' : 'fulfilled',
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([
      { status: 'rejected', reason: expect.objectContaining({ code: 'UNAUTHENTICATED' }) },
      { status: 'rejected', reason: expect.objectContaining({ code: 'UNAUTHENTICATED' }) },
    ]);
    // Two reads may be out at once: the first two verifications read alone, the eight that came
    // meanwhile share the third.
    expect(kv.reads.map((keys) => keys.length - 1)).toEqual([1, 1, 8]);
  });
});
