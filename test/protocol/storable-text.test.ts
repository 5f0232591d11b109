import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { characterCount } from '../../protocol/storable-text.js';

/** Any UTF-16 code unit, so strings hold pairs, lone high and low surrogates, and pairs split by them. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));
const surrogateHeavyUnit = fc.oneof(
  anyUnit,
  fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit)),
);

describe('characterCount', () => {
  it('counts code points exactly as spreading the string does, for any sequence of UTF-16 units', () => {
    fc.assert(
      fc.property(fc.string({ unit: surrogateHeavyUnit, maxLength: 64 }), (value) => {
        expect(characterCount(value)).toBe([...value].length);
      }),
      { numRuns: 2000 },
    );
  });

  it('counts an emoji once, a lone surrogate once and an empty text as zero', () => {
    expect(characterCount('')).toBe(0);
    expect(characterCount('a😀b')).toBe(3);
    expect(characterCount('\uD83D')).toBe(1);
    expect(characterCount('\uDE00\uD83D')).toBe(2);
    expect(characterCount('x\uD83D\uDE00\uD83D')).toBe(3);
  });
});
