/**
 * The chunk codec: the binary payload of one chunk of world content, and its JSON view for REST
 * clients. chunk-codec.md documents the format byte by byte. Game clients and game servers share
 * this file, so it uses only what browsers have (no Buffer).
 *
 * Floats are kept as float32 bit patterns from end to end: the binary path copies the 32 bits and
 * never reads them into a JS number, because V8 quiets a signalling NaN on the way through one.
 *
 * Every string (ids, asset ids, props keys and values) follows the shared text rule
 * (storable-text.ts: no U+0000, no unpaired surrogates), so a chunk's strings read back the same
 * through the JSON view, Postgres jsonb and any client's string type.
 */
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from './storable-text.js';

export const CHUNK_CODEC_VERSION = 1;

/** The server's limit on a chunk payload, in bytes. The codec itself does not apply it. */
export const MAX_CHUNK_BYTES = 1024 * 1024;
export const MAX_CHUNK_OBJECTS = 100_000;
export const MAX_ID_BYTES = 64;
export const MAX_ASSET_ID_BYTES = 128;
/** Objects and arrays in props may nest this deep; the props object itself is level 1. */
export const MAX_PROPS_DEPTH = 16;

export interface ChunkObject {
  /** 1 to 64 UTF-8 bytes, unique within the chunk. */
  id: string;
  /** 1 to 128 UTF-8 bytes. */
  asset_id: string;
  /** x, y, z. */
  position: Float32Array;
  /** A quaternion: x, y, z, w. */
  rotation: Float32Array;
  /** x, y, z. */
  scale: Float32Array;
  /** A JSON object the codec carries without looking inside. */
  props?: Record<string, unknown>;
}

export interface Chunk {
  objects: ChunkObject[];
}

/** Bytes that are not a valid chunk. `offset` is where in them the problem was found. */
export class ChunkCodecError extends Error {
  override name = 'ChunkCodecError';
  readonly offset: number;

  constructor(offset: number, problem: string) {
    super(`byte ${offset}: ${problem}`);
    this.offset = offset;
  }
}

/** A chunk value (to encode, or read from JSON) that breaks a rule. `path` names the field. */
export class ChunkValueError extends Error {
  override name = 'ChunkValueError';
  readonly path: string;

  constructor(path: string, problem: string) {
    super(`${path || 'the chunk'} ${problem}`);
    this.path = path;
  }
}

const MAGIC = [0x41, 0x43, 0x48, 0x4b]; // "ACHK"
const HEADER_BYTES = 10;
/** Two 1-byte strings, ten floats and an empty props length: what every object takes at least. */
const MIN_OBJECT_BYTES = 1 + 1 + 1 + 1 + 40 + 4;
const FLOAT_FIELDS = [
  ['position', 3],
  ['rotation', 4],
  ['scale', 3],
] as const;

const utf8 = new TextEncoder();
/** ignoreBOM keeps a leading U+FEFF in an id as data instead of silently dropping it. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** How the JSON view writes the floats JSON cannot hold, and the bits it reads them back as. */
const NON_FINITE_BITS = new Map<unknown, number>([
  ['NaN', 0x7fc00000],
  ['Infinity', 0x7f800000],
  ['-Infinity', 0xff800000],
]);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return isPlainObject(value) ? 'an object' : 'an object that is not plain';
  if (typeof value === 'string' || typeof value === 'function') return `a ${typeof value}`;
  return `${typeof value} ${String(value)}`;
}

/** "1 byte", "2 bytes". */
function bytesCount(count: number): string {
  return count === 1 ? '1 byte' : `${count} bytes`;
}

function keyPath(parent: string, key: string): string {
  if (!/^[A-Za-z_$][\w$]*$/.test(key)) return `${parent}[${JSON.stringify(key)}]`;
  return parent ? `${parent}.${key}` : key;
}

/**
 * What keeps `props` (named `path`) from being stored as JSON text that reads back the same, if
 * anything. Iterative, so hostile nesting is refused without recursing once per level; a cycle
 * is refused as too deep.
 */
function propsProblem(props: unknown, path: string): [at: string, problem: string] | undefined {
  if (!isPlainObject(props)) return [path, `must be a JSON object, got ${describe(props)}`];
  const pending: [unknown, string, number][] = [[props, path, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, at, depth] = next;
    if (typeof value === 'string') {
      if (isStorableText(value)) continue;
      return [at, UNSTORABLE_TEXT_MESSAGE];
    }
    if (value === null || typeof value === 'boolean') continue;
    if (typeof value === 'number') {
      if (Number.isFinite(value)) continue;
      return [at, `must be a finite number, got ${value}`];
    }
    if (!Array.isArray(value) && !isPlainObject(value)) return [at, `must be JSON, got ${describe(value)}`];
    if (depth > MAX_PROPS_DEPTH) return [at, `is nested more than ${MAX_PROPS_DEPTH} levels deep`];
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++)
        pending.push([value[index], `${at}[${index}]`, depth + 1]);
    } else {
      for (const [key, item] of Object.entries(value)) {
        if (!isStorableText(key)) return [keyPath(at, key), `is a key that ${UNSTORABLE_TEXT_MESSAGE}`];
        pending.push([item, keyPath(at, key), depth + 1]);
      }
    }
  }
  return undefined;
}

function textBytes(value: unknown, max: number, path: string): Uint8Array {
  if (typeof value !== 'string') throw new ChunkValueError(path, `must be a string, got ${describe(value)}`);
  // A string never takes fewer UTF-8 bytes than UTF-16 units, so a long one is refused unencoded.
  if (value.length > max) throw new ChunkValueError(path, `is longer than ${max} UTF-8 bytes`);
  if (!isStorableText(value)) throw new ChunkValueError(path, UNSTORABLE_TEXT_MESSAGE);
  const bytes = utf8.encode(value);
  if (bytes.length < 1 || bytes.length > max)
    throw new ChunkValueError(path, `is ${bytes.length} UTF-8 bytes; it must be 1..${max}`);
  return bytes;
}

interface Checked {
  object: ChunkObject;
  id: Uint8Array;
  assetId: Uint8Array;
  propsText?: string;
}

/** Every rule the binary format puts on a chunk, checked before anything is written. */
function checkChunk(chunk: Chunk): Checked[] {
  const objects: unknown = typeof chunk === 'object' && chunk !== null ? chunk.objects : undefined;
  if (!Array.isArray(objects)) throw new ChunkValueError('objects', 'must be an array');
  if (objects.length > MAX_CHUNK_OBJECTS)
    throw new ChunkValueError('objects', `holds ${objects.length} objects; at most ${MAX_CHUNK_OBJECTS} fit`);
  const firstIndexOf = new Map<string, number>();
  const checked: Checked[] = [];
  for (let index = 0; index < objects.length; index++) {
    const path = `objects[${index}]`;
    const object: ChunkObject = objects[index];
    if (typeof object !== 'object' || object === null)
      throw new ChunkValueError(path, `must be an object, got ${describe(object)}`);
    const id = textBytes(object.id, MAX_ID_BYTES, `${path}.id`);
    const first = firstIndexOf.get(object.id);
    if (first !== undefined)
      throw new ChunkValueError(
        `${path}.id`,
        `${JSON.stringify(object.id)} is already the id of objects[${first}]`,
      );
    firstIndexOf.set(object.id, index);
    const assetId = textBytes(object.asset_id, MAX_ASSET_ID_BYTES, `${path}.asset_id`);
    for (const [name, length] of FLOAT_FIELDS) {
      const floats: unknown = object[name];
      if (!(floats instanceof Float32Array) || floats.length !== length)
        throw new ChunkValueError(`${path}.${name}`, `must be a Float32Array of ${length} floats`);
    }
    if (object.props === undefined) {
      checked.push({ object, id, assetId });
      continue;
    }
    const problem = propsProblem(object.props, `${path}.props`);
    if (problem) throw new ChunkValueError(...problem);
    checked.push({ object, id, assetId, propsText: JSON.stringify(object.props) });
  }
  return checked;
}

/** The chunk in binary format v1. Throws ChunkValueError for a chunk that breaks a rule. */
export function encodeChunk(chunk: Chunk): Uint8Array {
  const checked = checkChunk(chunk).map((entry) => ({
    ...entry,
    props: entry.propsText === undefined ? undefined : utf8.encode(entry.propsText),
  }));
  let size = HEADER_BYTES;
  for (const { id, assetId, props } of checked)
    size += 1 + id.length + 1 + assetId.length + 40 + 4 + (props?.length ?? 0);
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  bytes.set(MAGIC);
  view.setUint8(4, CHUNK_CODEC_VERSION);
  view.setUint8(5, 0);
  view.setUint32(6, checked.length, true);
  let offset = HEADER_BYTES;
  for (const { object, id, assetId, props } of checked) {
    for (const text of [id, assetId]) {
      view.setUint8(offset, text.length);
      bytes.set(text, offset + 1);
      offset += 1 + text.length;
    }
    for (const [name] of FLOAT_FIELDS) {
      const floats = object[name];
      for (const bits of new Uint32Array(floats.buffer, floats.byteOffset, floats.length)) {
        view.setUint32(offset, bits, true);
        offset += 4;
      }
    }
    view.setUint32(offset, props?.length ?? 0, true);
    offset += 4;
    if (props) {
      bytes.set(props, offset);
      offset += props.length;
    }
  }
  return bytes;
}

/** Reads fields in order, refusing any field the input is too short for. */
class Reader {
  offset = 0;
  private readonly view: DataView;

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Where a field of `size` bytes starts; moves past it. */
  claim(size: number, field: string): number {
    const start = this.offset;
    const remaining = this.bytes.length - start;
    if (size > remaining)
      throw new ChunkCodecError(start, `truncated: ${field} needs ${bytesCount(size)}, ${remaining} remain`);
    this.offset = start + size;
    return start;
  }

  u8(field: string): number {
    return this.view.getUint8(this.claim(1, field));
  }

  u32(field: string): number {
    return this.view.getUint32(this.claim(4, field), true);
  }

  utf8(size: number, field: string): string {
    const start = this.claim(size, field);
    try {
      return strictUtf8.decode(this.bytes.subarray(start, start + size));
    } catch {
      throw new ChunkCodecError(start, `the ${field} bytes are not valid UTF-8`);
    }
  }

  /** The bits are copied as integers: no JS number ever holds them. */
  floats(count: number, field: string): Float32Array {
    const start = this.claim(4 * count, field);
    const floats = new Float32Array(count);
    const bits = new Uint32Array(floats.buffer);
    for (let index = 0; index < count; index++) bits[index] = this.view.getUint32(start + 4 * index, true);
    return floats;
  }

  /** A length byte and the UTF-8 string it announces, 1 to `max` bytes. */
  text(max: number, field: string): string {
    const at = this.offset;
    const length = this.u8(`${field} length`);
    if (length < 1 || length > max)
      throw new ChunkCodecError(at, `${field} length ${length} is outside 1..${max}`);
    const text = this.utf8(length, field);
    // Strict UTF-8 holds no surrogates at all, so of the text rule only U+0000 is left to refuse,
    // at the byte that holds it.
    if (!isStorableText(text))
      throw new ChunkCodecError(this.bytes.indexOf(0, at + 1), `the ${field} ${UNSTORABLE_TEXT_MESSAGE}`);
    return text;
  }
}

/**
 * Props must be the exact text JSON.stringify writes for them (no whitespace, no duplicate keys,
 * numbers and escapes as JSON.stringify spells them): the encoder writes that text, so only then
 * does every valid chunk encode back to its own bytes.
 */
function readProps(reader: Reader, length: number): Record<string, unknown> {
  const at = reader.offset;
  const text = reader.utf8(length, 'props');
  let props: unknown;
  try {
    props = JSON.parse(text);
  } catch {
    throw new ChunkCodecError(at, 'props are not valid JSON');
  }
  const problem = propsProblem(props, 'props');
  if (problem) throw new ChunkCodecError(at, `${problem[0]} ${problem[1]}`);
  if (JSON.stringify(props) !== text)
    throw new ChunkCodecError(at, 'props are not written as JSON.stringify writes them');
  return props as Record<string, unknown>;
}

/**
 * The chunk held by `bytes`, which must be exactly one valid chunk. Throws ChunkCodecError, and
 * nothing else, for any other input; never allocates more than the input's size warrants.
 */
export function decodeChunk(bytes: Uint8Array): Chunk {
  if (!(bytes instanceof Uint8Array)) throw new ChunkCodecError(0, 'the input is not a Uint8Array');
  const reader = new Reader(bytes);
  reader.claim(MAGIC.length, 'magic');
  if (MAGIC.some((byte, index) => bytes[index] !== byte))
    throw new ChunkCodecError(0, 'the magic is not "ACHK" (41 43 48 4b)');
  const version = reader.u8('version');
  if (version !== CHUNK_CODEC_VERSION)
    throw new ChunkCodecError(
      4,
      `version ${version} is not supported; this decoder reads ${CHUNK_CODEC_VERSION}`,
    );
  const flags = reader.u8('flags');
  if (flags !== 0) throw new ChunkCodecError(5, `flags are ${flags}; they are reserved and must be 0`);
  const count = reader.u32('object count');
  if (count > MAX_CHUNK_OBJECTS)
    throw new ChunkCodecError(6, `object count ${count} is over the limit of ${MAX_CHUNK_OBJECTS}`);
  const remaining = bytes.length - HEADER_BYTES;
  if (count * MIN_OBJECT_BYTES > remaining)
    throw new ChunkCodecError(
      6,
      `object count ${count} cannot fit in the ${remaining} bytes that follow (an object takes at least ${MIN_OBJECT_BYTES})`,
    );
  const objects: ChunkObject[] = [];
  const firstIndexOf = new Map<string, number>();
  for (let index = 0; index < count; index++) {
    const idAt = reader.offset + 1;
    const id = reader.text(MAX_ID_BYTES, 'id');
    const first = firstIndexOf.get(id);
    if (first !== undefined)
      throw new ChunkCodecError(
        idAt,
        `object ${index} repeats the id ${JSON.stringify(id)} of object ${first}`,
      );
    firstIndexOf.set(id, index);
    const object: ChunkObject = {
      id,
      asset_id: reader.text(MAX_ASSET_ID_BYTES, 'asset id'),
      position: reader.floats(3, 'position'),
      rotation: reader.floats(4, 'rotation'),
      scale: reader.floats(3, 'scale'),
    };
    const propsLength = reader.u32('props length');
    if (propsLength > 0) object.props = readProps(reader, propsLength);
    objects.push(object);
  }
  if (reader.offset !== bytes.length)
    throw new ChunkCodecError(
      reader.offset,
      `${bytesCount(bytes.length - reader.offset)} after the last object, where the chunk must end`,
    );
  return { objects };
}

/** A float32 as JSON: shortest round-trip form, `-0` kept, non-finite values as strings. */
function floatJson(value: number): string {
  if (!Number.isFinite(value)) return `"${value}"`;
  return Object.is(value, -0) ? '-0' : String(value);
}

/**
 * The JSON view of a chunk (`Accept: application/json`). NaN is written as "NaN" whatever its
 * payload. Throws ChunkValueError for a chunk that breaks a rule, as encodeChunk does.
 */
export function chunkToJson(chunk: Chunk): string {
  const objects = checkChunk(chunk).map(({ object, propsText }) => {
    const fields = [`"id":${JSON.stringify(object.id)}`, `"asset_id":${JSON.stringify(object.asset_id)}`];
    for (const [name] of FLOAT_FIELDS)
      fields.push(`"${name}":[${Array.from(object[name], floatJson).join(',')}]`);
    if (propsText !== undefined) fields.push(`"props":${propsText}`);
    return `{${fields.join(',')}}`;
  });
  return `{"version":${CHUNK_CODEC_VERSION},"objects":[${objects.join(',')}]}`;
}

/** `value` as a plain object with only `keys` (and all of `required`) as its own keys. */
function jsonObject(value: unknown, path: string, keys: string[], required: string[]) {
  if (!isPlainObject(value)) throw new ChunkValueError(path, `must be a JSON object, got ${describe(value)}`);
  for (const key of Object.keys(value))
    if (!keys.includes(key)) throw new ChunkValueError(keyPath(path, key), 'is not a known key');
  for (const key of required)
    if (!Object.hasOwn(value, key)) throw new ChunkValueError(keyPath(path, key), 'is required');
  return (key: string): unknown => (Object.hasOwn(value, key) ? value[key] : undefined);
}

const float32 = new DataView(new ArrayBuffer(4));

function floatsFromJson(value: unknown, length: number, path: string): Float32Array {
  if (!Array.isArray(value) || value.length !== length)
    throw new ChunkValueError(path, `must be an array of ${length} numbers`);
  const floats = new Float32Array(length);
  const bits = new Uint32Array(floats.buffer);
  for (let index = 0; index < length; index++) {
    const item: unknown = value[index];
    const at = `${path}[${index}]`;
    const nonFinite = NON_FINITE_BITS.get(item);
    if (nonFinite !== undefined) {
      bits[index] = nonFinite;
    } else if (typeof item === 'number' && !Number.isNaN(item)) {
      if (!Number.isFinite(Math.fround(item)))
        throw new ChunkValueError(at, `is ${item}, beyond the float32 range`);
      // IEEE-754 rounding to the nearest float32.
      float32.setFloat32(0, item, true);
      bits[index] = float32.getUint32(0, true);
    } else {
      throw new ChunkValueError(
        at,
        `must be a number or "NaN", "Infinity", "-Infinity", got ${describe(item)}`,
      );
    }
  }
  return floats;
}

/**
 * The chunk a JSON view describes (the parsed body). Strict: unknown keys are refused, and every
 * rule of the binary format applies. Throws ChunkValueError naming the field.
 */
export function chunkFromJson(value: unknown): Chunk {
  const root = jsonObject(value, '', ['version', 'objects'], ['objects']);
  const version = root('version');
  if (version !== undefined && version !== CHUNK_CODEC_VERSION)
    throw new ChunkValueError('version', `must be ${CHUNK_CODEC_VERSION}, got ${describe(version)}`);
  const list = root('objects');
  if (!Array.isArray(list)) throw new ChunkValueError('objects', `must be an array, got ${describe(list)}`);
  if (list.length > MAX_CHUNK_OBJECTS)
    throw new ChunkValueError('objects', `holds ${list.length} objects; at most ${MAX_CHUNK_OBJECTS} fit`);
  const objects: ChunkObject[] = [];
  for (let index = 0; index < list.length; index++) {
    const path = `objects[${index}]`;
    const field = jsonObject(
      list[index],
      path,
      ['id', 'asset_id', 'position', 'rotation', 'scale', 'props'],
      ['id', 'asset_id', 'position', 'rotation', 'scale'],
    );
    // checkChunk below checks id, asset_id and props with the rules encodeChunk applies.
    const object = {
      id: field('id'),
      asset_id: field('asset_id'),
      position: floatsFromJson(field('position'), 3, `${path}.position`),
      rotation: floatsFromJson(field('rotation'), 4, `${path}.rotation`),
      scale: floatsFromJson(field('scale'), 3, `${path}.scale`),
    } as ChunkObject;
    const props = field('props');
    if (props !== undefined) object.props = props as Record<string, unknown>;
    objects.push(object);
  }
  checkChunk({ objects });
  return { objects };
}
