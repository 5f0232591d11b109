import { encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { z } from 'zod';
import { clientPayloadSchemas } from '../../protocol/operations.js';
import { type Dictionary, type JsonSchema, mutated, schemaArbitrary } from './schema-arbitrary.js';
import {
  concatBytes,
  containsHostile,
  Hostile,
  hostileValue,
  objectWith,
  protoKey,
  toMsgpack,
} from './values.js';

/** The pseudo frame type of cases that are raw bytes rather than a frame of some type. */
export const RAW_TARGET = 'raw bytes';

export const frameTypes = Object.keys(clientPayloadSchemas) as (keyof typeof clientPayloadSchemas)[];

export interface FrameCase {
  target: string;
  /** Sent on the connection authenticated as the fuzz user, or on one that never authenticated. */
  authed: boolean;
  /** `fresh`: the driver fills in an unused request id and expects the answer to carry it. */
  id: { kind: 'fresh' } | { kind: 'none' } | { kind: 'hostile'; value: Hostile };
  /** The frame as a value (`t`, `d` and extra keys; `id` is added when sent), or raw bytes/text. */
  frame: { kind: 'value'; entries: [string, unknown][] } | { kind: 'raw'; build: () => Uint8Array | string };
  /** Damage applied to the encoded frame. */
  damage: 'none' | 'truncate' | 'trailing-bytes' | 'two-frames' | 'as-text';
  cut: number;
  labels: string[];
  /** Well-formed frame of this type with a payload its schema accepts: never refused as malformed. */
  clean: boolean;
}

/** Encodes the frame with its request id and damage; text frames come back as strings. */
export function encodeFrame(c: FrameCase, id: number | undefined): Uint8Array | string {
  if (c.frame.kind === 'raw') return c.frame.build();
  const idEntry: [string, unknown][] =
    c.id.kind === 'fresh' ? [['id', id]] : c.id.kind === 'hostile' ? [['id', c.id.value]] : [];
  const [first, ...rest] = c.frame.entries;
  const entries = first ? [first, ...idEntry, ...rest] : idEntry;
  const bytes = toMsgpack(objectWith(entries));
  switch (c.damage) {
    case 'truncate':
      return bytes.subarray(0, c.cut % bytes.byteLength);
    case 'trailing-bytes':
      return concatBytes([bytes, Uint8Array.of(0xc1, 0xff, 0x00)]);
    case 'two-frames':
      return concatBytes([bytes, bytes]);
    case 'as-text':
      return Buffer.from(bytes).toString('latin1');
    default:
      return bytes;
  }
}

function payloadJsonSchema(schema: z.ZodType): JsonSchema {
  try {
    return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  } catch {
    return {};
  }
}

const HOSTILE_TYPES = [
  '',
  'x'.repeat(65),
  'PING',
  'ping\u0000',
  '\ud800',
  '__proto__',
  'constructor',
  'ack',
  'error',
  'pong',
];

/** Cases of one client frame type: valid frames, damaged payloads, hostile envelopes, before and after auth. */
export function frameCaseArbitrary(
  type: (typeof frameTypes)[number],
  dictionary: Dictionary,
): fc.Arbitrary<FrameCase> {
  const schema = clientPayloadSchemas[type] as z.ZodType;
  const valid = schemaArbitrary(payloadJsonSchema(schema), { dictionary });
  const payload = fc.oneof(
    {
      weight: 6,
      arbitrary: valid.map((value) => ({
        value: value as unknown,
        present: true,
        label: 'd=valid',
        mutated: false,
      })),
    },
    {
      weight: 5,
      arbitrary: mutated(valid).map(({ value, label }) => ({
        value,
        present: true,
        label: `d: ${label}`,
        mutated: true,
      })),
    },
    {
      weight: 1,
      arbitrary: hostileValue.map((h) => ({
        value: h as unknown,
        present: true,
        label: `d=${h.label}`,
        mutated: true,
      })),
    },
    {
      weight: 1,
      arbitrary: fc.constant({ value: undefined as unknown, present: false, label: 'no d', mutated: false }),
    },
  );
  const t = fc.oneof(
    { weight: 12, arbitrary: fc.constant<unknown>(type) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<unknown>(...frameTypes.filter((other) => other !== type), ...HOSTILE_TYPES),
    },
    { weight: 1, arbitrary: hostileValue },
  );
  const id = fc.oneof(
    { weight: 6, arbitrary: fc.constant<FrameCase['id']>({ kind: 'fresh' }) },
    { weight: 2, arbitrary: fc.constant<FrameCase['id']>({ kind: 'none' }) },
    { weight: 2, arbitrary: hostileValue.map<FrameCase['id']>((value) => ({ kind: 'hostile', value })) },
  );
  const extra = fc.oneof(
    { weight: 8, arbitrary: fc.constant<[string, unknown][]>([]) },
    {
      weight: 1,
      arbitrary: fc.tuple(protoKey, hostileValue).map(([k, v]) => [[k, v]] as [string, unknown][]),
    },
    { weight: 1, arbitrary: fc.constant<[string, unknown][]>([['x', 1]]) },
  );
  const damage = fc.oneof(
    { weight: 16, arbitrary: fc.constant<FrameCase['damage']>('none') },
    {
      weight: 1,
      arbitrary: fc.constantFrom<FrameCase['damage']>('truncate', 'trailing-bytes', 'two-frames', 'as-text'),
    },
  );
  return fc.record({ authed: fc.boolean(), payload, t, id, extra, damage, cut: fc.nat() }).map((c) => {
    const entries: [string, unknown][] = [
      ['t', c.t],
      ...(c.payload.present ? [['d', c.payload.value] as [string, unknown]] : []),
      ...c.extra,
    ];
    const schemaAccepts =
      !c.payload.mutated && !containsHostile(c.payload.value) && schema.safeParse(c.payload.value).success;
    return {
      target: type,
      authed: c.authed,
      id: c.id,
      frame: { kind: 'value', entries },
      damage: c.damage,
      cut: c.cut,
      labels: [
        `t=${c.t instanceof Hostile ? c.t.label : JSON.stringify(c.t)}`,
        `id=${c.id.kind === 'hostile' ? c.id.value.label : c.id.kind}`,
        c.payload.label,
        ...c.extra.map(([k, v]) => `extra ${k}=${v instanceof Hostile ? v.label : JSON.stringify(v)}`),
        ...(c.damage === 'none' ? [] : [`damage=${c.damage}`]),
        c.authed ? 'authed' : 'anonymous',
      ],
      clean:
        schemaAccepts && c.t === type && c.id.kind === 'fresh' && c.extra.length === 0 && c.damage === 'none',
    } satisfies FrameCase;
  });
}

const bytes = (...parts: (number[] | Uint8Array)[]) =>
  concatBytes(parts.map((p) => (p instanceof Uint8Array ? p : Uint8Array.from(p))));
const repeat = (part: number[], times: number) => {
  const out = new Uint8Array(part.length * times);
  for (let i = 0; i < times; i++) out.set(part, i * part.length);
  return out;
};
const FF4 = [0xff, 0xff, 0xff, 0xff];
/** `{t: 'ping', d: ` — an envelope whose payload the bomb then declares. */
const PING_WITH_D = [0x82, 0xa1, 0x74, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0xa1, 0x64];

/** Byte sequences aimed at the decoder: length bombs, depth bombs, truncation, wrong shapes, wrong frame kinds. */
const RAW_FRAMES: [string, () => Uint8Array | string][] = [
  ['array16-header x20000', () => repeat([0xdc, 0xff, 0xff], 20_000)],
  ['ping with array16-header x5000 in d', () => bytes(PING_WITH_D, repeat([0xdc, 0xff, 0xff], 5000))],
  ['array32 declaring 2^32-1', () => bytes([0xdd, ...FF4])],
  ['map32 declaring 2^32-1', () => bytes([0xdf, ...FF4])],
  ['map16 declaring 65535', () => bytes([0xde, 0xff, 0xff])],
  ['str32 declaring 4 GB', () => bytes([0xdb, ...FF4, 0x61])],
  ['str16 declaring 65535', () => bytes([0xda, 0xff, 0xff])],
  ['bin32 declaring 4 GB', () => bytes([0xc6, ...FF4])],
  ['ext32 declaring 4 GB', () => bytes([0xc9, ...FF4, 0x01])],
  ['ping with map32 bomb in d', () => bytes(PING_WITH_D, [0xdf, ...FF4])],
  ['ping with str32 bomb in d', () => bytes(PING_WITH_D, [0xdb, ...FF4])],
  [
    'map32 envelope declaring 2^32-1 keys',
    () => bytes([0xdf, ...FF4, 0xa1, 0x74, 0xa4, 0x70, 0x69, 0x6e, 0x67]),
  ],
  ['fixarray depth 60000', () => repeat([0x91], 60_000)],
  ['ping with fixmap depth 20000 in d', () => bytes(PING_WITH_D, repeat([0x81, 0xa1, 0x61], 20_000), [0xc0])],
  ['fixarray depth 300000 (over the hard ceiling)', () => repeat([0x91], 300_000)],
  ['reserved byte 0xc1', () => bytes([0xc1])],
  ['empty message', () => new Uint8Array(0)],
  ['timestamp ext with bad nanoseconds', () => bytes([0x81, 0xa1, 0x74, 0xd7, 0xff, ...FF4, 0, 0, 0, 0])],
  ['timestamp ext as t', () => bytes([0x81, 0xa1, 0x74, 0xd6, 0xff, 0, 0, 0, 0])],
  ['t as bin', () => bytes([0x81, 0xa1, 0x74, 0xc4, 0x04, 0x70, 0x69, 0x6e, 0x67])],
  ['integer map key', () => bytes([0x81, 0x01, 0xa4, 0x70, 0x69, 0x6e, 0x67])],
  [
    'duplicate t keys',
    () => bytes([0x82, 0xa1, 0x74, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0xa1, 0x74, 0xa4, 0x61, 0x75, 0x74, 0x68]),
  ],
  [
    '__proto__ envelope key',
    () =>
      bytes(
        [0x82, 0xa1, 0x74, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0xa9],
        new TextEncoder().encode('__proto__'),
        [0x80],
      ),
  ],
  [
    'id uint64 max',
    () => bytes([0x82, 0xa1, 0x74, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0xa2, 0x69, 0x64, 0xcf, ...FF4, ...FF4]),
  ],
  [
    'id int64 min',
    () =>
      bytes([
        0x82, 0xa1, 0x74, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0xa2, 0x69, 0x64, 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0,
      ]),
  ],
  ['id 2^32', () => encode({ t: 'ping', id: 2 ** 32 })],
  [
    'id float NaN',
    () =>
      bytes([
        0x82, 0xa1, 0x74, 0xa4, 0x70, 0x69, 0x6e, 0x67, 0xa2, 0x69, 0x64, 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0,
      ]),
  ],
  [
    'frame of 64 KiB',
    () => encode({ t: 'presence.status', d: { status_message: 'm'.repeat(64 * 1024 - 64) } }),
  ],
  [
    'frame just over 64 KiB',
    () => encode({ t: 'presence.status', d: { status_message: 'm'.repeat(64 * 1024) } }),
  ],
  ['frame over the hard ceiling', () => encode({ t: 'ping', d: 'z'.repeat(300 * 1024) })],
  ['array frame', () => encode(['ping', 1])],
  ['integer frame', () => encode(42)],
  ['nil frame', () => encode(null)],
  ['string frame', () => encode('ping')],
  ['bin frame', () => encode(Uint8Array.of(1, 2, 3))],
  ['text frame', () => '{"t":"ping","id":1}'],
  ['empty text frame', () => ''],
  ['huge text frame', () => 't'.repeat(70_000)],
];

/** Raw-byte cases: the catalogue, random bytes, array16 headers by the thousand and cut valid frames. */
export const rawCaseArbitrary: fc.Arbitrary<FrameCase> = fc
  .record({
    authed: fc.boolean(),
    pick: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...RAW_FRAMES) },
      {
        weight: 2,
        arbitrary: fc
          .uint8Array({ minLength: 1, maxLength: 64 })
          .map(
            (random) =>
              [`random ${Buffer.from(random).toString('hex')}`, () => random] as [string, () => Uint8Array],
          ),
      },
      {
        weight: 1,
        arbitrary: fc
          .integer({ min: 1, max: 21_000 })
          .map(
            (n) =>
              [`array16-header x${n}`, () => repeat([0xdc, 0xff, 0xff], n)] as [string, () => Uint8Array],
          ),
      },
      {
        weight: 1,
        arbitrary: fc.tuple(fc.constantFrom(...frameTypes), fc.nat()).map(([t, cut]) => {
          const whole = encode({ t, id: 7, d: { user_ids: ['a', 'b'], token: 'x', status_message: 's' } });
          return [
            `${t} frame cut at ${cut % whole.byteLength}`,
            () => whole.subarray(0, cut % whole.byteLength),
          ] as [string, () => Uint8Array];
        }),
      },
    ),
  })
  .map(({ authed, pick: [label, build] }) => ({
    target: RAW_TARGET,
    authed,
    id: { kind: 'none' },
    frame: { kind: 'raw', build },
    damage: 'none',
    cut: 0,
    labels: [label, authed ? 'authed' : 'anonymous'],
    clean: false,
  }));
