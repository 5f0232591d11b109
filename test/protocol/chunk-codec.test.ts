import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Chunk,
  ChunkCodecError,
  type ChunkObject,
  ChunkValueError,
  chunkFromJson,
  chunkToJson,
  decodeChunk,
  encodeChunk,
  MAX_CHUNK_OBJECTS,
} from '../../protocol/chunk-codec.js';
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../../protocol/storable-text.js';

const utf8 = new TextEncoder();
const QUIET_NAN = 0x7fc00000;

const bitsOf = (floats: Float32Array) =>
  Array.from(new Uint32Array(floats.buffer, floats.byteOffset, floats.length));
const fromBits = (...bits: number[]) => new Float32Array(new Uint32Array(bits).buffer);

function object(id: string, extra: Partial<ChunkObject> = {}): ChunkObject {
  return {
    id,
    asset_id: 'asset/crate',
    position: new Float32Array(3),
    rotation: new Float32Array([0, 0, 0, 1]),
    scale: new Float32Array([1, 1, 1]),
    ...extra,
  };
}

/** A JSON-view object, as a REST client sends it. */
function jsonObject(id: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    asset_id: 'asset/crate',
    position: [0, 0, 0],
    rotation: [0, 0, 0, 1],
    scale: [1, 1, 1],
    ...extra,
  };
}

/** Raw bytes from parts: strings as UTF-8, numbers as single bytes. */
function raw(...parts: (string | number | number[])[]): Uint8Array {
  return new Uint8Array(parts.flatMap((part) => (typeof part === 'string' ? [...utf8.encode(part)] : part)));
}
const u32 = (value: number) => [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, value >>> 24];
const header = (count: number) => raw('ACHK', 1, 0, u32(count));
const TEN_FLOATS = new Array(40).fill(0);
/** An object with a 1-byte asset id "a", zero floats and the given props text (none when empty). */
const rawObject = (id: string, props = '') =>
  raw(utf8.encode(id).length, id, 1, 'a', TEN_FLOATS, u32(utf8.encode(props).length), props);
const concat = (...parts: Uint8Array[]) => raw(...parts.map((part) => [...part]));

/** Decodes, or checks that the refusal is a ChunkCodecError pointing inside the input. */
function decodeOrRefusal(bytes: Uint8Array): Chunk | ChunkCodecError {
  try {
    return decodeChunk(bytes);
  } catch (error) {
    expect(error).toBeInstanceOf(ChunkCodecError);
    const { offset } = error as ChunkCodecError;
    expect(Number.isInteger(offset) && offset >= 0 && offset <= bytes.length).toBe(true);
    return error as ChunkCodecError;
  }
}

/** Every string of an object: its id and asset id, its props' keys and string values. */
function stringsOf(object: ChunkObject): string[] {
  const strings = [object.id, object.asset_id];
  const pending: unknown[] = object.props ? [object.props] : [];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') strings.push(value);
    else if (Array.isArray(value)) pending.push(...value);
    else if (typeof value === 'object' && value !== null) {
      strings.push(...Object.keys(value));
      pending.push(...Object.values(value));
    }
  }
  return strings;
}

function refusal(run: () => unknown): ChunkCodecError | ChunkValueError {
  try {
    run();
  } catch (error) {
    if (error instanceof ChunkCodecError || error instanceof ChunkValueError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

/** Every float32 bit pattern, with the interesting ones (zeros, subnormals, infinities, NaNs) made likely. */
const floatBits = fc.oneof(
  fc.integer({ min: 0, max: 0xffffffff }),
  fc.constantFrom(
    0x00000000, // 0
    0x80000000, // -0
    0x00000001, // smallest subnormal
    0x807fffff, // largest negative subnormal
    0x7f800000, // Infinity
    0xff800000, // -Infinity
    0x7fc00000, // quiet NaN
    0x7f800001, // signalling NaN
    0xffa5a5a5, // signalling NaN, sign set, payload
    0x7fffffff, // quiet NaN, full payload
  ),
);
const floats = (length: number) =>
  fc.array(floatBits, { minLength: length, maxLength: length }).map((bits) => fromBits(...bits));

/**
 * Text of 1 to `max` UTF-8 bytes: ASCII, or any code points (multi-byte, U+FEFF included) but
 * U+0000, which the text rule refuses.
 */
const text = (max: number) =>
  fc
    .oneof(
      fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: max }),
      fc.string({ unit: 'binary', minLength: 1, maxLength: max / 4 }),
      fc.constantFrom('\ufeffbom', 'é', '😀'),
    )
    .filter((value) => isStorableText(value) && utf8.encode(value).length <= max);

const propsKey = fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'prototype', '1', '-0'));
const props = fc.dictionary(propsKey, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 });

const chunkObject = fc.record(
  {
    id: text(64),
    asset_id: text(128),
    position: floats(3),
    rotation: floats(4),
    scale: floats(3),
    props,
  },
  { requiredKeys: ['id', 'asset_id', 'position', 'rotation', 'scale'] },
);
const chunk = fc
  .uniqueArray(chunkObject, { selector: (item) => item.id, maxLength: 6 })
  .map((objects): Chunk => ({ objects }));

function expectSameChunk(actual: Chunk, expected: Chunk) {
  expect(actual.objects).toHaveLength(expected.objects.length);
  expected.objects.forEach((want, index) => {
    const got = actual.objects[index] as ChunkObject;
    expect([got.id, got.asset_id]).toEqual([want.id, want.asset_id]);
    for (const name of ['position', 'rotation', 'scale'] as const)
      expect(bitsOf(got[name])).toEqual(bitsOf(want[name]));
    // Props are JSON: they come back as JSON.parse(JSON.stringify(props)) would (-0 as 0).
    if (want.props === undefined) expect(Object.hasOwn(got, 'props')).toBe(false);
    else expect(got.props).toEqual(JSON.parse(JSON.stringify(want.props)));
  });
}

describe('chunk codec: binary format', () => {
  it('decodes an encoded chunk with every float32 bit pattern intact: -0, subnormals, infinities, NaN payloads, signalling NaNs', () => {
    fc.assert(
      fc.property(chunk, (value) => {
        expectSameChunk(decodeChunk(encodeChunk(value)), value);
      }),
      { numRuns: 300 },
    );
  });

  it('encodes a decoded payload back to the same bytes', () => {
    fc.assert(
      fc.property(chunk, (value) => {
        const bytes = encodeChunk(value);
        expect(encodeChunk(decodeChunk(bytes))).toEqual(bytes);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the quiet bit of a signalling NaN clear through decode and encode', () => {
    const bytes = encodeChunk({
      objects: [object('x', { position: fromBits(0x7f800001, 0xffa00000, 0x7fbfffff) })],
    });
    const position = (decodeChunk(bytes).objects[0] as ChunkObject).position;
    expect(bitsOf(position)).toEqual([0x7f800001, 0xffa00000, 0x7fbfffff]);
    expect(encodeChunk(decodeChunk(bytes))).toEqual(bytes);
  });

  it('writes the bits of a Float32Array that is a view into a larger buffer', () => {
    const shared = fromBits(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    const value = object('x', { position: shared.subarray(1, 4), rotation: shared.subarray(4, 8) });
    const decoded = decodeChunk(encodeChunk({ objects: [value] })).objects[0] as ChunkObject;
    expect([bitsOf(decoded.position), bitsOf(decoded.rotation)]).toEqual([
      [2, 3, 4],
      [5, 6, 7, 8],
    ]);
  });

  it('encodes a chunk without objects as the 10-byte header', () => {
    expect(encodeChunk({ objects: [] })).toEqual(header(0));
    expect(decodeChunk(header(0))).toEqual({ objects: [] });
  });

  it('keeps a byte-order mark at the start of an id as data', () => {
    const bytes = encodeChunk({ objects: [object('\ufeffdoor')] });
    expect(bytes.subarray(10, 14)).toEqual(raw(7, 0xef, 0xbb, 0xbf));
    expect(decodeChunk(bytes).objects[0]?.id).toBe('\ufeffdoor');
  });

  it('refuses ids and asset ids outside their UTF-8 byte ranges, naming the field', () => {
    expect(encodeChunk({ objects: [object('é'.repeat(32))] })).toHaveLength(10 + 1 + 64 + 1 + 11 + 44);
    const cases: [ChunkObject, string, string][] = [
      [object(''), 'objects[0].id', 'is 0 UTF-8 bytes; it must be 1..64'],
      [object('é'.repeat(33)), 'objects[0].id', 'is 66 UTF-8 bytes; it must be 1..64'],
      [object('x'.repeat(65)), 'objects[0].id', 'is longer than 64 UTF-8 bytes'],
      [object('\ud800'), 'objects[0].id', UNSTORABLE_TEXT_MESSAGE],
      [object('do\u0000or'), 'objects[0].id', UNSTORABLE_TEXT_MESSAGE],
      [object('x', { asset_id: 'asset\u0000' }), 'objects[0].asset_id', UNSTORABLE_TEXT_MESSAGE],
      [object(7 as unknown as string), 'objects[0].id', 'must be a string, got number 7'],
      [object('x', { asset_id: '' }), 'objects[0].asset_id', 'is 0 UTF-8 bytes; it must be 1..128'],
      [object('x', { asset_id: 'a'.repeat(129) }), 'objects[0].asset_id', 'is longer than 128 UTF-8 bytes'],
    ];
    for (const [value, path, message] of cases) {
      const error = refusal(() => encodeChunk({ objects: [value] }));
      expect(error).toBeInstanceOf(ChunkValueError);
      expect(error).toMatchObject({ path, message: `${path} ${message}` });
    }
  });

  it('refuses a repeated id', () => {
    const error = refusal(() => encodeChunk({ objects: [object('a'), object('b'), object('a')] }));
    expect(error).toMatchObject({
      path: 'objects[2].id',
      message: 'objects[2].id "a" is already the id of objects[0]',
    });
  });

  it('refuses float fields that are not Float32Arrays of the right length', () => {
    const cases: [Partial<ChunkObject>, string][] = [
      [{ position: new Float32Array(2) }, 'objects[0].position'],
      [{ rotation: new Float32Array(3) }, 'objects[0].rotation'],
      [{ scale: new Float64Array(3) as unknown as Float32Array }, 'objects[0].scale'],
      [{ position: [0, 0, 0] as unknown as Float32Array }, 'objects[0].position'],
    ];
    for (const [extra, path] of cases)
      expect(refusal(() => encodeChunk({ objects: [object('x', extra)] }))).toMatchObject({ path });
  });

  it('refuses props that are not a plain object of JSON values nested 16 levels deep at most', () => {
    const nested = (levels: number) => {
      let value: Record<string, unknown> = {};
      for (let level = 1; level < levels; level++) value = { a: value };
      return value;
    };
    expect(() => encodeChunk({ objects: [object('x', { props: nested(16) })] })).not.toThrow();
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const cases: [unknown, string, string][] = [
      [[1], 'objects[0].props', 'must be a JSON object, got an array'],
      [null, 'objects[0].props', 'must be a JSON object, got null'],
      [new Date(0), 'objects[0].props', 'must be a JSON object, got an object that is not plain'],
      [{ when: new Map() }, 'objects[0].props.when', 'must be JSON, got an object that is not plain'],
      [{ n: Number.NaN }, 'objects[0].props.n', 'must be a finite number, got NaN'],
      [{ list: [1, undefined] }, 'objects[0].props.list[1]', 'must be JSON, got undefined'],
      [{ 'a b': () => 1 }, 'objects[0].props["a b"]', 'must be JSON, got a function'],
      [nested(17), `objects[0].props${'.a'.repeat(16)}`, 'is nested more than 16 levels deep'],
      [cycle, `objects[0].props${'.self'.repeat(16)}`, 'is nested more than 16 levels deep'],
      [{ label: 'lamp\u0000' }, 'objects[0].props.label', UNSTORABLE_TEXT_MESSAGE],
      [{ tags: ['ok', '\udc00'] }, 'objects[0].props.tags[1]', UNSTORABLE_TEXT_MESSAGE],
      [{ 'a\u0000': 1 }, 'objects[0].props["a\\u0000"]', `is a key that ${UNSTORABLE_TEXT_MESSAGE}`],
    ];
    for (const [value, path, message] of cases) {
      const error = refusal(() =>
        encodeChunk({ objects: [object('x', { props: value as Record<string, unknown> })] }),
      );
      expect(error).toMatchObject({ path, message: `${path} ${message}` });
    }
  });
});

describe('chunk codec: strict decoding', () => {
  const valid = concat(header(1), rawObject('x', '{"a":1}'));

  it('decodes a hand-built payload', () => {
    expect(decodeChunk(valid).objects[0]).toMatchObject({ id: 'x', asset_id: 'a', props: { a: 1 } });
  });

  it.each([
    ['a header cut inside the magic', raw('ACH'), 0, 'truncated: magic needs 4 bytes, 3 remain'],
    ['a header cut before the flags', raw('ACHK', 1), 5, 'truncated: flags needs 1 byte, 0 remain'],
    [
      'a header cut inside the count',
      raw('ACHK', 1, 0, 1, 0),
      6,
      'truncated: object count needs 4 bytes, 2 remain',
    ],
    ['a wrong magic', raw('ACHX', 1, 0, u32(0)), 0, 'the magic is not "ACHK" (41 43 48 4b)'],
    [
      'an unsupported version',
      raw('ACHK', 2, 0, u32(0)),
      4,
      'version 2 is not supported; this decoder reads 1',
    ],
    ['nonzero flags', raw('ACHK', 1, 0x80, u32(0)), 5, 'flags are 128; they are reserved and must be 0'],
    [
      'a count the remaining bytes cannot hold',
      concat(header(2), rawObject('x')),
      6,
      'object count 2 cannot fit in the 48 bytes that follow (an object takes at least 48)',
    ],
    [
      'a count over the limit',
      header(MAX_CHUNK_OBJECTS + 1),
      6,
      'object count 100001 is over the limit of 100000',
    ],
    [
      'an id length of 0',
      concat(header(1), raw(0, TEN_FLOATS, TEN_FLOATS)),
      10,
      'id length 0 is outside 1..64',
    ],
    [
      'an id length of 65',
      concat(header(1), raw(65, 'x'.repeat(65), 1, 'a', TEN_FLOATS, u32(0))),
      10,
      'id length 65 is outside 1..64',
    ],
    [
      'an asset id length of 0',
      concat(header(1), raw(1, 'x', 0, 'a', TEN_FLOATS, u32(0))),
      12,
      'asset id length 0 is outside 1..128',
    ],
    [
      'an id that is not UTF-8',
      concat(header(1), raw(2, 0xc3, 0x28, 1, 'a', TEN_FLOATS, u32(0))),
      11,
      'the id bytes are not valid UTF-8',
    ],
    [
      'an asset id that is not UTF-8 (an encoded surrogate)',
      concat(header(1), raw(1, 'x', 3, 0xed, 0xa0, 0x80, TEN_FLOATS, u32(0))),
      13,
      'the asset id bytes are not valid UTF-8',
    ],
    [
      'a repeated id',
      concat(header(3), rawObject('a'), rawObject('b'), rawObject('a')),
      10 + 48 + 48 + 1,
      'object 2 repeats the id "a" of object 0',
    ],
    [
      'a payload cut inside the floats',
      concat(header(1), rawObject('x'.repeat(40))).subarray(0, 61),
      53,
      'truncated: position needs 12 bytes, 8 remain',
    ],
    ['props that are not JSON', concat(header(1), rawObject('x', '{"a":')), 58, 'props are not valid JSON'],
    [
      'props that are not UTF-8',
      concat(header(1), rawObject('x', 'xx')).fill(0xff, 58),
      58,
      'the props bytes are not valid UTF-8',
    ],
    [
      'props that are an array',
      concat(header(1), rawObject('x', '[]')),
      58,
      'props must be a JSON object, got an array',
    ],
    [
      'props that are null',
      concat(header(1), rawObject('x', 'null')),
      58,
      'props must be a JSON object, got null',
    ],
    [
      'props nested 17 levels deep',
      concat(header(1), rawObject('x', `${'{"a":'.repeat(16)}{}${'}'.repeat(16)}`)),
      58,
      `props${'.a'.repeat(16)} is nested more than 16 levels deep`,
    ],
    [
      'props with whitespace',
      concat(header(1), rawObject('x', '{"a": 1}')),
      58,
      'props are not written as JSON.stringify writes them',
    ],
    [
      'props with a repeated key',
      concat(header(1), rawObject('x', '{"a":1,"a":2}')),
      58,
      'props are not written as JSON.stringify writes them',
    ],
    [
      'props with a number JSON.stringify spells otherwise',
      concat(header(1), rawObject('x', '{"a":1.0}')),
      58,
      'props are not written as JSON.stringify writes them',
    ],
    [
      'props with a number beyond the double range',
      concat(header(1), rawObject('x', '{"a":1e400}')),
      58,
      'props.a must be a finite number, got Infinity',
    ],
    [
      'props longer than the bytes that remain',
      concat(header(1), raw(1, 'x', 1, 'a', TEN_FLOATS, u32(0xffffffff), '{}')),
      58,
      'truncated: props needs 4294967295 bytes, 2 remain',
    ],
    [
      'bytes after the last object',
      concat(valid, raw(0)),
      valid.length,
      '1 byte after the last object, where the chunk must end',
    ],
  ])('refuses %s, at the byte where it is found', (_name, bytes, offset, problem) => {
    const error = refusal(() => decodeChunk(bytes));
    expect(error).toBeInstanceOf(ChunkCodecError);
    expect(error).toMatchObject({ offset, message: `byte ${offset}: ${problem}` });
  });

  it('refuses U+0000 in an id or an asset id at the byte that holds it', () => {
    expect(refusal(() => decodeChunk(concat(header(1), rawObject('do\u0000or'))))).toMatchObject({
      offset: 13,
      message: `byte 13: the id ${UNSTORABLE_TEXT_MESSAGE}`,
    });
    const assetId = concat(header(1), raw(1, 'x', 3, 'a\u0000b', TEN_FLOATS, u32(0)));
    expect(refusal(() => decodeChunk(assetId))).toMatchObject({
      offset: 14,
      message: `byte 14: the asset id ${UNSTORABLE_TEXT_MESSAGE}`,
    });
  });

  it.each([
    ['U+0000 in a value', '{"a":"\\u0000"}', 'props.a'],
    ['an unpaired surrogate in a value', '{"a":["\\ud800"]}', 'props.a[0]'],
    ['U+0000 in a key', '{"\\u0000":1}', 'props["\\u0000"] is a key that'],
  ])('refuses props holding %s at the first byte of the props', (_name, props, path) => {
    expect(refusal(() => decodeChunk(concat(header(1), rawObject('x', props))))).toMatchObject({
      offset: 58,
      message: `byte 58: ${path} ${UNSTORABLE_TEXT_MESSAGE}`,
    });
  });

  it.each([
    ['an overlong U+0000', [0xc0, 0x80]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a lone continuation byte', [0x80]],
    ['a sequence cut short', [0xe2, 0x82]],
    ['a byte UTF-8 never uses', [0xff]],
  ])('refuses %s in a string instead of reading it as U+FFFD', (_name, bytes) => {
    const id = concat(header(1), raw(bytes.length, bytes, 1, 'a', TEN_FLOATS, u32(0)));
    expect(refusal(() => decodeChunk(id))).toMatchObject({
      offset: 11,
      message: 'byte 11: the id bytes are not valid UTF-8',
    });
    const props = concat(
      header(1),
      raw(1, 'x', 1, 'a', TEN_FLOATS, u32(bytes.length + 8), '{"a":"', bytes, '"}'),
    );
    expect(refusal(() => decodeChunk(props))).toMatchObject({
      offset: 58,
      message: 'byte 58: the props bytes are not valid UTF-8',
    });
  });

  it('refuses a count of 4 billion, or of 100,000, in a 10-byte input before reading any object', () => {
    expect(refusal(() => decodeChunk(header(0xffffffff)))).toMatchObject({
      offset: 6,
      message: 'byte 6: object count 4294967295 is over the limit of 100000',
    });
    expect(refusal(() => decodeChunk(header(MAX_CHUNK_OBJECTS)))).toMatchObject({
      offset: 6,
      message:
        'byte 6: object count 100000 cannot fit in the 0 bytes that follow (an object takes at least 48)',
    });
  });

  it('throws only ChunkCodecError, even for input that is not a Uint8Array', () => {
    expect(refusal(() => decodeChunk([0x41] as unknown as Uint8Array))).toMatchObject({ offset: 0 });
  });

  it('gives random bytes back as a chunk or a ChunkCodecError with an offset inside the input', () => {
    const anyBytes = fc.oneof(
      fc.uint8Array({ maxLength: 200 }),
      // Past the header, so the object fields get random bytes too.
      fc
        .tuple(fc.integer({ min: 0, max: 4 }), fc.uint8Array({ maxLength: 200 }))
        .map(([count, rest]) => concat(header(count), rest)),
    );
    fc.assert(
      fc.property(anyBytes, (bytes) => {
        const result = decodeOrRefusal(bytes);
        if (result instanceof ChunkCodecError) return;
        expect(result.objects.flatMap(stringsOf).filter((value) => !isStorableText(value))).toEqual([]);
      }),
      { numRuns: 2000 },
    );
  });

  it('gives mutated valid payloads back as a chunk that re-encodes to them, or a ChunkCodecError inside the input', () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
      fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
      fc.record({
        kind: fc.constant('append' as const),
        bytes: fc.uint8Array({ minLength: 1, maxLength: 60 }),
      }),
      fc.record({
        kind: fc.constant('u32' as const),
        at: fc.nat(),
        value: fc.constantFrom(0xffffffff, 0x80000000, 0x7fffffff, 0x10000, 100_001, 1, 0),
      }),
      fc.record({
        kind: fc.constant('u8' as const),
        at: fc.nat(),
        value: fc.constantFrom(0, 0xff, 64, 65, 128, 129),
      }),
    );
    fc.assert(
      fc.property(chunk, fc.array(mutation, { minLength: 1, maxLength: 3 }), (value, mutations) => {
        let bytes = encodeChunk(value);
        for (const change of mutations) {
          if (change.kind === 'append') bytes = concat(bytes, change.bytes);
          else if (change.kind === 'cut') bytes = bytes.slice(0, change.at % (bytes.length + 1));
          else if (change.kind === 'u32') {
            if (bytes.length >= 4)
              new DataView(bytes.buffer).setUint32(change.at % (bytes.length - 3), change.value, true);
          } else if (bytes.length > 0) {
            const at = change.at % bytes.length;
            bytes[at] = change.kind === 'u8' ? change.value : (bytes[at] as number) ^ change.xor;
          }
        }
        const result = decodeOrRefusal(bytes);
        if (result instanceof ChunkCodecError) return;
        expect(encodeChunk(result)).toEqual(bytes);
        expect(result.objects.flatMap(stringsOf).filter((value) => !isStorableText(value))).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses every truncation of a valid payload with an offset inside the cut input', () => {
    fc.assert(
      fc.property(
        chunk.filter((value) => value.objects.length > 0),
        (value) => {
          const bytes = encodeChunk(value);
          for (let length = 0; length < bytes.length; length++) {
            const cut = bytes.subarray(0, length);
            expect(decodeOrRefusal(cut)).toBeInstanceOf(ChunkCodecError);
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it('refuses huge counts and lengths in a valid payload without allocating for them', () => {
    const bytes = concat(header(1), rawObject('x', '{"a":1}'));
    const set = (at: number, value: number, size: 1 | 4) => {
      const copy = bytes.slice();
      if (size === 1) copy[at] = value;
      else copy.set(u32(value), at);
      return copy;
    };
    expect(refusal(() => decodeChunk(set(6, 0xffffffff, 4)))).toMatchObject({ offset: 6 });
    expect(refusal(() => decodeChunk(set(6, 2, 4)))).toMatchObject({ offset: 6 });
    expect(refusal(() => decodeChunk(set(10, 0xff, 1)))).toMatchObject({ offset: 10 });
    expect(refusal(() => decodeChunk(set(12, 0xff, 1)))).toMatchObject({ offset: 12 });
    expect(refusal(() => decodeChunk(set(54, 0xffffffff, 4)))).toMatchObject({ offset: 58 });
    expect(refusal(() => decodeChunk(set(54, 0, 4)))).toMatchObject({ offset: 58 });
  });
});

describe('chunk codec: JSON view', () => {
  const viewOf = (value: Chunk) => JSON.parse(chunkToJson(value));

  it('writes the documented JSON, with props only when an object has them', () => {
    const value = {
      objects: [
        object('a', { props: { on: true } }),
        object('b', { position: new Float32Array([1.5, -2, 3]) }),
      ],
    };
    expect(chunkToJson(value)).toBe(
      '{"version":1,"objects":[' +
        '{"id":"a","asset_id":"asset/crate","position":[0,0,0],"rotation":[0,0,0,1],"scale":[1,1,1],"props":{"on":true}},' +
        '{"id":"b","asset_id":"asset/crate","position":[1.5,-2,3],"rotation":[0,0,0,1],"scale":[1,1,1]}]}',
    );
  });

  it('reads a stored 0.1 back as 0.10000000149011612', () => {
    const stored = chunkFromJson({ objects: [jsonObject('x', { position: [0.1, 0, 0] })] });
    expect(bitsOf((stored.objects[0] as ChunkObject).position)[0]).toBe(0x3dcccccd);
    expect(viewOf(stored).objects[0].position[0]).toBe(0.10000000149011612);
  });

  it('writes -0 as the token -0, which parses back to -0', () => {
    const json = chunkToJson({ objects: [object('x', { position: fromBits(0x80000000, 0, 0) })] });
    expect(json).toContain('"position":[-0,0,0]');
    const position = (chunkFromJson(JSON.parse(json)).objects[0] as ChunkObject).position;
    expect(Object.is(position[0], -0)).toBe(true);
    expect(bitsOf(position)[0]).toBe(0x80000000);
  });

  it('writes non-finite floats as strings and reads NaN back as the quiet NaN 0x7fc00000', () => {
    const json = chunkToJson({
      objects: [object('x', { position: fromBits(0x7f800001, 0x7f800000, 0xff800000) })],
    });
    expect(json).toContain('"position":["NaN","Infinity","-Infinity"]');
    const position = (chunkFromJson(JSON.parse(json)).objects[0] as ChunkObject).position;
    expect(bitsOf(position)).toEqual([QUIET_NAN, 0x7f800000, 0xff800000]);
  });

  it('rounds numbers to the nearest float32 and accepts the largest float32', () => {
    const stored = chunkFromJson({
      objects: [jsonObject('x', { position: [16777217, 3.4028235e38, 1e-46] })],
    });
    expect(Array.from((stored.objects[0] as ChunkObject).position)).toEqual([
      16777216, 3.4028234663852886e38, 0,
    ]);
  });

  it('refuses a number beyond the float32 range, naming where it is', () => {
    for (const [number, at] of [
      [3.5e38, 1],
      [-1e39, 2],
    ] as const) {
      const position = [0, 0, 0];
      position[at] = number;
      const error = refusal(() =>
        chunkFromJson({ objects: [jsonObject('a'), jsonObject('b', { position })] }),
      );
      expect(error).toBeInstanceOf(ChunkValueError);
      expect(error).toMatchObject({
        path: `objects[1].position[${at}]`,
        message: `objects[1].position[${at}] is ${number}, beyond the float32 range`,
      });
    }
  });

  it('round-trips through JSON text to the same bytes, with every NaN made the quiet NaN', () => {
    const canonicalNaN = (floats: Float32Array) =>
      fromBits(
        ...bitsOf(floats).map((bits) =>
          (bits & 0x7f800000) === 0x7f800000 && bits & 0x7fffff ? QUIET_NAN : bits,
        ),
      );
    fc.assert(
      fc.property(chunk, (value) => {
        const expected = {
          objects: value.objects.map((item) => ({
            ...item,
            position: canonicalNaN(item.position),
            rotation: canonicalNaN(item.rotation),
            scale: canonicalNaN(item.scale),
          })),
        };
        expect(encodeChunk(chunkFromJson(JSON.parse(chunkToJson(value))))).toEqual(encodeChunk(expected));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps __proto__ and constructor keys in props as own data, through JSON and binary, touching no prototype', () => {
    const body = JSON.parse(
      '{"objects":[{"id":"x","asset_id":"a","position":[0,0,0],"rotation":[0,0,0,1],"scale":[1,1,1],' +
        '"props":{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}}]}',
    );
    const stored = chunkFromJson(body);
    const props = decodeChunk(encodeChunk(stored)).objects[0]?.props as Record<string, unknown>;
    expect(Object.keys(props)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(props)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(props, '__proto__')?.value).toEqual({ polluted: true });
    expect(chunkToJson(stored)).toContain('"props":{"__proto__":{"polluted":true},"constructor"');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['a body that is not an object', [], '', 'the chunk must be a JSON object, got an array'],
    ['an unknown top-level key', { objects: [], extra: 1 }, 'extra', 'extra is not a known key'],
    ['a missing objects key', { version: 1 }, 'objects', 'objects is required'],
    ['another version', { version: 2, objects: [] }, 'version', 'version must be 1, got number 2'],
    ['objects that are not an array', { objects: {} }, 'objects', 'objects must be an array, got an object'],
    [
      'an object that is not an object',
      { objects: ['x'] },
      'objects[0]',
      'objects[0] must be a JSON object, got a string',
    ],
    [
      'an unknown object key',
      { objects: [jsonObject('x', { 'colour tint': 1 })] },
      'objects[0]["colour tint"]',
      'objects[0]["colour tint"] is not a known key',
    ],
    [
      'a missing float field',
      { objects: [{ id: 'x', asset_id: 'a', position: [0, 0, 0], rotation: [0, 0, 0, 1] }] },
      'objects[0].scale',
      'objects[0].scale is required',
    ],
    [
      'a float array of the wrong length',
      { objects: [jsonObject('x', { rotation: [0, 0, 1] })] },
      'objects[0].rotation',
      'objects[0].rotation must be an array of 4 numbers',
    ],
    [
      'a float that is another string',
      { objects: [jsonObject('x', { scale: [1, 'nan', 1] })] },
      'objects[0].scale[1]',
      'objects[0].scale[1] must be a number or "NaN", "Infinity", "-Infinity", got a string',
    ],
    [
      'an empty id',
      { objects: [jsonObject('')] },
      'objects[0].id',
      'objects[0].id is 0 UTF-8 bytes; it must be 1..64',
    ],
    [
      'an asset id of 129 bytes',
      { objects: [jsonObject('x', { asset_id: 'a'.repeat(129) })] },
      'objects[0].asset_id',
      'objects[0].asset_id is longer than 128 UTF-8 bytes',
    ],
    [
      'an id with an unpaired surrogate',
      JSON.parse(
        '{"objects":[{"id":"\\ud800","asset_id":"a","position":[0,0,0],"rotation":[0,0,0,1],"scale":[1,1,1]}]}',
      ),
      'objects[0].id',
      `objects[0].id ${UNSTORABLE_TEXT_MESSAGE}`,
    ],
    [
      'U+0000 in an id',
      { objects: [jsonObject('do\u0000or')] },
      'objects[0].id',
      `objects[0].id ${UNSTORABLE_TEXT_MESSAGE}`,
    ],
    [
      'U+0000 in an asset id',
      { objects: [jsonObject('x', { asset_id: 'asset\u0000' })] },
      'objects[0].asset_id',
      `objects[0].asset_id ${UNSTORABLE_TEXT_MESSAGE}`,
    ],
    [
      'U+0000 in a props value',
      { objects: [jsonObject('x', { props: { label: { text: 'a\u0000' } } })] },
      'objects[0].props.label.text',
      `objects[0].props.label.text ${UNSTORABLE_TEXT_MESSAGE}`,
    ],
    [
      'an unpaired surrogate in a props value',
      JSON.parse(
        `{"objects":[${JSON.stringify(jsonObject('x')).slice(0, -1)},"props":{"label":"\\udc00"}}]}`,
      ),
      'objects[0].props.label',
      `objects[0].props.label ${UNSTORABLE_TEXT_MESSAGE}`,
    ],
    [
      'U+0000 in a props key',
      { objects: [jsonObject('x', { props: { 'a\u0000': 1 } })] },
      'objects[0].props["a\\u0000"]',
      `objects[0].props["a\\u0000"] is a key that ${UNSTORABLE_TEXT_MESSAGE}`,
    ],
    [
      'a repeated id',
      { objects: [jsonObject('x'), jsonObject('x')] },
      'objects[1].id',
      'objects[1].id "x" is already the id of objects[0]',
    ],
    [
      'props that are null',
      { objects: [jsonObject('x', { props: null })] },
      'objects[0].props',
      'objects[0].props must be a JSON object, got null',
    ],
    [
      'props nested 17 levels deep',
      JSON.parse(
        `{"objects":[${JSON.stringify(jsonObject('x')).slice(0, -1)},"props":${'{"a":'.repeat(16)}{}${'}'.repeat(16)}}]}`,
      ),
      `objects[0].props${'.a'.repeat(16)}`,
      `objects[0].props${'.a'.repeat(16)} is nested more than 16 levels deep`,
    ],
  ])('refuses %s, naming the field', (_name, body, path, message) => {
    const error = refusal(() => chunkFromJson(body));
    expect(error).toBeInstanceOf(ChunkValueError);
    expect(error).toMatchObject({ path, message });
  });

  it('refuses more than 100,000 objects before looking at them', () => {
    const body = { objects: new Array(MAX_CHUNK_OBJECTS + 1).fill(null) };
    expect(refusal(() => chunkFromJson(body))).toMatchObject({
      path: 'objects',
      message: 'objects holds 100001 objects; at most 100000 fit',
    });
  });
});

describe('chunk codec: documentation', () => {
  it('decodes the hex example of chunk-codec.md to the documented object, which encodes to it', () => {
    const doc = readFileSync(new URL('../../protocol/chunk-codec.md', import.meta.url), 'utf8');
    const example = doc.slice(doc.indexOf('\n## Example\n'));
    const block = (language: string) => {
      const found = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(example);
      if (!found?.[1]) throw new Error(`no ${language} block in the example of chunk-codec.md`);
      return found[1];
    };
    const bytes = new Uint8Array(
      block('hex')
        .trim()
        .split(/\s+/)
        .map((pair) => Number.parseInt(pair, 16)),
    );
    const documented = JSON.parse(block('json'));
    expect(bytes).toHaveLength(151);
    expect(JSON.parse(chunkToJson(decodeChunk(bytes)))).toEqual(documented);
    expect(encodeChunk(chunkFromJson(documented))).toEqual(bytes);
  });
});
