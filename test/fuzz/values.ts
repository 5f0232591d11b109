import { Encoder } from '@msgpack/msgpack';
import fc from 'fast-check';

/**
 * The value model shared by the REST and frame fuzzers: plain JSON-like values in which any
 * leaf may be a Hostile, a value built only when its case is sent (a batch of 10,000 generated
 * cases must not hold 10,000 megabyte strings) and written the same way as JSON text or msgpack.
 */
export class Hostile {
  private jsonText: string | undefined;
  private msgpackBytes: Uint8Array | undefined;

  constructor(
    readonly label: string,
    private readonly buildJson: () => string,
    private readonly buildMsgpack: () => Uint8Array,
  ) {}

  json(): string {
    this.jsonText ??= this.buildJson();
    return this.jsonText;
  }

  msgpack(): Uint8Array {
    this.msgpackBytes ??= this.buildMsgpack();
    return this.msgpackBytes;
  }

  /** Drops the built bytes once the case was sent, so sampled batches stay small. */
  release(): void {
    this.jsonText = undefined;
    this.msgpackBytes = undefined;
  }
}

// BigInt leaves (2**64 - 1 as uint64) need the BigInt extension of the encoder.
const leafEncoder = new Encoder({ useBigInt64: true });

/** An object with an own, enumerable key such as `__proto__`, which an object literal cannot create. */
export function objectWith(entries: [string, unknown][]): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [key, value] of entries) {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return object;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Hostile);
}

/** JSON text of a value; Hostile leaves contribute their own (possibly invalid) text. */
export function toJson(value: unknown): string {
  if (value instanceof Hostile) return value.json();
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .map((key) => `${JSON.stringify(key)}:${toJson(value[key])}`)
      .join(',')}}`;
  }
  if (value === undefined) return 'null';
  if (typeof value === 'bigint') return value.toString();
  return JSON.stringify(value);
}

function header(small: number, base16: number, length: number, smallMax: number): Uint8Array {
  if (length <= smallMax) return Uint8Array.of(small | length);
  if (length <= 0xffff) return Uint8Array.of(base16, length >> 8, length & 0xff);
  return Uint8Array.of(base16 + 1, length >>> 24, (length >> 16) & 0xff, (length >> 8) & 0xff, length & 0xff);
}

export function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

function writeMsgpack(value: unknown, out: Uint8Array[]): void {
  if (value instanceof Hostile) out.push(value.msgpack());
  else if (Array.isArray(value)) {
    out.push(header(0x90, 0xdc, value.length, 15));
    for (const item of value) writeMsgpack(item, out);
  } else if (isRecord(value)) {
    const keys = Object.keys(value);
    out.push(header(0x80, 0xde, keys.length, 15));
    for (const key of keys) {
      out.push(leafEncoder.encode(key));
      writeMsgpack(value[key], out);
    }
  } else out.push(leafEncoder.encode(value ?? null));
}

/** msgpack bytes of a value; Hostile leaves contribute their own (possibly invalid) bytes. */
export function toMsgpack(value: unknown): Uint8Array {
  const out: Uint8Array[] = [];
  writeMsgpack(value, out);
  return concatBytes(out);
}

/** Calls `release` on every Hostile leaf of a sent value. */
export function releaseAll(value: unknown): void {
  if (value instanceof Hostile) value.release();
  else if (Array.isArray(value)) for (const item of value) releaseAll(item);
  else if (isRecord(value)) for (const key of Object.keys(value)) releaseAll(value[key]);
}

export function containsHostile(value: unknown): boolean {
  if (value instanceof Hostile) return true;
  if (Array.isArray(value)) return value.some(containsHostile);
  if (isRecord(value)) return Object.keys(value).some((key) => containsHostile(value[key]));
  return false;
}

/** A Hostile that is an ordinary value, written by the normal writers (only its building is deferred). */
function plain(label: string, build: () => unknown): Hostile {
  return new Hostile(
    label,
    () => toJson(build()),
    () => toMsgpack(build()),
  );
}

const ARRAY_MSGPACK_OPEN = Uint8Array.of(0x91);
const MAP_MSGPACK_OPEN = Uint8Array.of(0x81, 0xa1, 0x61);

/** `depth` levels of one-element arrays or `{a: ...}` maps around a zero, written without recursion. */
function nested(kind: 'array' | 'object', depth: number): Hostile {
  const [open, close, bytes] =
    kind === 'array' ? ['[', ']', ARRAY_MSGPACK_OPEN] : ['{"a":', '}', MAP_MSGPACK_OPEN];
  return new Hostile(
    `${kind}-nested-${depth}`,
    () => `${open.repeat(depth)}0${close.repeat(depth)}`,
    () => {
      const out = new Uint8Array(bytes.byteLength * depth + 1);
      for (let i = 0; i < depth; i++) out.set(bytes, i * bytes.byteLength);
      return out;
    },
  );
}

/** A number whose JSON text and msgpack bytes are spelled out, for values JSON.stringify cannot write. */
function number(label: string, json: string, msgpack: () => Uint8Array): Hostile {
  return new Hostile(label, () => json, msgpack);
}

const float64 = (value: number) => {
  const out = new Uint8Array(9);
  out[0] = 0xcb;
  new DataView(out.buffer).setFloat64(1, value);
  return out;
};

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

/** Every hostile value the fuzzers plant, by label: type confusion, bad text, range and size extremes. */
const HOSTILE_VALUES: Hostile[] = [
  plain('nul', () => '\u0000'),
  plain('nul-inside', () => 'abc\u0000def'),
  plain('lone-high-surrogate', () => '\ud800'),
  plain('lone-low-surrogate', () => 'x\udfffx'),
  plain('reversed-surrogates', () => '\udc00\ud800'),
  plain('bom-and-nonchars', () => '\ufeff\uffff\ufffe'),
  plain('bidi-override', () => '\u202eevil'),
  plain('control-chars', () => '\r\n\t\u0001\u001f\u007f'),
  plain('empty-string', () => ''),
  plain('whitespace', () => '   \t  '),
  plain('string-65', () => 'a'.repeat(65)),
  plain('string-1001', () => 'b'.repeat(1001)),
  plain('string-64k', () => 'c'.repeat(64 * 1024)),
  plain('string-1m', () => 'd'.repeat(1024 * 1024)),
  plain('emoji-x300', () => '\u{1f600}'.repeat(300)),
  plain('sql', () => "'; drop table users; --"),
  // A template-injection probe: the placeholder is meant literally.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the placeholder is the payload.
  plain('template', () => '${7*7}{{7*7}}%s%n'),
  plain('path-traversal', () => '../../../etc/passwd'),
  plain('uuid-upper', () => '0192F3A4-5B6C-7D8E-9FA0-B1C2D3E4F5A6'),
  plain('proto-string', () => '__proto__'),
  plain('zero', () => 0),
  plain('minus-one', () => -1),
  plain('fraction', () => 1.5),
  plain('big', () => 1e308),
  plain('minus-big', () => -1e308),
  plain('smallest-subnormal', () => 5e-324),
  plain('int32-overflow', () => 2 ** 31),
  plain('uint32-overflow', () => 2 ** 32),
  plain('unsafe-integer', () => 2 ** 53 + 2),
  plain('two-pow-64', () => 2 ** 64),
  plain('uint64-max', () => 2n ** 64n - 1n),
  plain('int64-min', () => -(2n ** 63n)),
  number('minus-zero', '-0', () => float64(-0)),
  number('overflow-to-infinity', '1e999', () => float64(Number.POSITIVE_INFINITY)),
  number('nan', 'NaN', () => float64(Number.NaN)),
  number('400-digit-integer', '9'.repeat(400), () => float64(1e308)),
  plain('true', () => true),
  plain('false', () => false),
  plain('null', () => null),
  plain('empty-array', () => []),
  plain('empty-object', () => ({})),
  plain('array-of-nul', () => ['\u0000', 'a\u0000']),
  plain('array-10k', () => new Array(10_000).fill(0)),
  plain('array-100k', () => new Array(100_000).fill(1)),
  plain('array-10k-strings', () => new Array(10_000).fill('x'.repeat(100))),
  plain('object-10k-keys', () => Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]))),
  plain('nul-key', () => ({ 'a\u0000b': 1 })),
  plain('surrogate-key', () => ({ '\ud800': 1 })),
  plain('empty-key', () => ({ '': '' })),
  ...PROTO_KEYS.map((key) => plain(`${key}-key`, () => objectWith([[key, { polluted: true }]]))),
  plain('constructor-prototype', () =>
    objectWith([['constructor', objectWith([['prototype', { polluted: true }]])]]),
  ),
  plain('proto-key-array', () => objectWith([['__proto__', []]])),
  plain('proto-key-null', () => objectWith([['__proto__', null]])),
  ...[10, 63, 64, 65, 100, 1000, 10_000].map((depth) => nested('array', depth)),
  ...[63, 64, 65, 1000, 10_000].map((depth) => nested('object', depth)),
  nested('array', 100_000),
];

export const hostileValue: fc.Arbitrary<Hostile> = fc.constantFrom(...HOSTILE_VALUES);
export const protoKey = fc.constantFrom(...PROTO_KEYS);
