/** The binary format v1 (chunk-codec.md): what the socket and the chunk routes carry. */
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../storable-text.js';
import {
  CHUNK_CODEC_VERSION,
  type Chunk,
  ChunkCodecError,
  type ChunkObject,
  FLOAT_FIELDS,
  MAX_ASSET_ID_BYTES,
  MAX_CHUNK_OBJECTS,
  MAX_ID_BYTES,
} from './chunk.js';
import { checkChunk, propsProblem, utf8 } from './rules.js';

const MAGIC = [0x41, 0x43, 0x48, 0x4b]; // "ACHK"
const HEADER_BYTES = 10;
/** Two 1-byte strings, ten floats and an empty props length: what every object takes at least. */
const MIN_OBJECT_BYTES = 1 + 1 + 1 + 1 + 40 + 4;
/** ignoreBOM keeps a leading U+FEFF in an id as data instead of silently dropping it. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** "1 byte", "2 bytes". */
function bytesCount(count: number): string {
  return count === 1 ? '1 byte' : `${count} bytes`;
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
