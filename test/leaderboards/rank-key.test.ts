import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keyOfMember, memberOf, type RankKey } from '../../src/modules/leaderboards/rank-key.js';

/** The encoding as first written, with BigInt: the members stored in Redis must not change. */
const OFFSET = 2n ** 53n - 1n;
const bigintHex = (value: number) => (BigInt(value) + OFFSET).toString(16).padStart(14, '0');
const reference = (key: RankKey) =>
  bigintHex(key.rankScore) +
  bigintHex(key.rankSubscore) +
  key.updatedAt.toString(16).padStart(12, '0') +
  key.userId.toLowerCase();

const edges = [0, 1, -1, 2 ** 28, -(2 ** 28), 2 ** 28 - 1, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 52, -(2 ** 52)];
const value = fc.oneof(fc.maxSafeInteger(), fc.constantFrom(...edges), fc.integer());
const rankKey = fc.record({
  rankScore: value,
  rankSubscore: value,
  updatedAt: fc.integer({ min: 0, max: 2 ** 47 }),
  userId: fc.uuid(),
});

describe('rank keys as ordered set members', () => {
  it('encodes every key as the BigInt encoding did, and decodes it back', () => {
    fc.assert(
      fc.property(rankKey, (key) => {
        const member = memberOf(key);
        expect(member).toBe(reference(key));
        expect(keyOfMember(member)).toEqual({ ...key, userId: key.userId.toLowerCase() });
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses a member whose values leave ±(2^53-1)', () => {
    const userId = '00000000-0000-4000-8000-000000000000';
    const time = '000000000000';
    const past = (2n ** 54n - 1n).toString(16).padStart(14, '0');
    const highest = bigintHex(2 ** 53 - 1);
    expect(keyOfMember(highest + highest + time + userId)?.rankScore).toBe(2 ** 53 - 1);
    expect(keyOfMember(past + highest + time + userId)).toBeUndefined();
    expect(keyOfMember(highest + 'f'.repeat(14) + time + userId)).toBeUndefined();
  });
});
