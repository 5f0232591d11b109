import { encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MsgpackBounds } from '../../src/platform/gateway/msgpack-bounds.js';

const bounds = new MsgpackBounds(8);
const bytes = (...values: number[]) => new Uint8Array(values);
const repeat = (times: number, ...header: number[]) => new Uint8Array(Array(times).fill(header).flat());

/** Values of every msgpack family: ints of every width, floats, strings, binary, nil, nested containers. */
const msgpackValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
    fc.double({ noNaN: true }),
    fc.string({ maxLength: 300 }),
    fc.uint8Array({ maxLength: 70_000 }),
    fc.constantFrom(null, true, false),
    fc.array(tie('value'), { maxLength: 20 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 20 }),
  ),
})).value;

describe('msgpack bounds pass', () => {
  it('accepts every complete msgpack value within the depth limit', () => {
    fc.assert(
      fc.property(msgpackValue, (value) => {
        expect(bounds.check(encode(value))).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('refuses every strict prefix of a value as ending early', () => {
    fc.assert(
      fc.property(msgpackValue, fc.nat(), (value, cut) => {
        const whole = encode(value);
        const prefix = whole.subarray(0, cut % whole.length);
        expect(bounds.check(prefix)).toBeDefined();
      }),
      { numRuns: 300 },
    );
  });

  it('refuses bytes after a complete value', () => {
    expect(bounds.check(bytes(0x01, 0x02))).toMatchObject({ offset: 1, reason: 'bytes follow the frame' });
  });

  it('refuses the reserved head byte 0xc1', () => {
    expect(bounds.check(bytes(0x91, 0xc1))).toMatchObject({ offset: 1 });
  });

  it('refuses nested array16 headers declaring 65,535 items each at the first header', () => {
    expect(bounds.check(repeat(9000, 0xdc, 0xff, 0xff))).toMatchObject({ offset: 0 });
  });

  it.each([
    ['array32 declaring 2^32-1 items', bytes(0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0)],
    ['map32 declaring 2^32-1 entries', bytes(0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0)],
    ['str32 declaring 4 GiB', bytes(0xdb, 0xff, 0xff, 0xff, 0xff, 0x61)],
    ['bin32 declaring 4 GiB', bytes(0xc6, 0xff, 0xff, 0xff, 0xff, 0x00)],
    ['ext32 declaring 4 GiB', bytes(0xc9, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00)],
    ['a fixarray of 3 holding 2 items', bytes(0x93, 0x01, 0x02)],
  ])('refuses %s with more declared than the bytes left', (_name, frame) => {
    expect(bounds.check(frame)).toMatchObject({ offset: 0 });
  });

  it('refuses a header cut inside its length field', () => {
    expect(bounds.check(bytes(0xdc, 0x00))).toMatchObject({
      offset: 0,
      reason: 'the frame ends inside a header',
    });
  });

  it('refuses a float64 cut short', () => {
    expect(bounds.check(bytes(0xcb, 0x00, 0x00))).toMatchObject({ offset: 0 });
  });

  it('accepts containers nested exactly to the limit and refuses one level more', () => {
    const nested = (levels: number) =>
      encode(Array.from({ length: levels - 1 }).reduce((inner) => [inner], [1]));
    expect(bounds.check(nested(8))).toBeUndefined();
    expect(bounds.check(nested(9))).toMatchObject({ offset: 8 });
  });

  it('refuses an empty frame', () => {
    expect(bounds.check(bytes())).toBeDefined();
  });
});
