/** The JSON view of a chunk, for REST clients (`Accept: application/json`). */
import {
  CHUNK_CODEC_VERSION,
  type Chunk,
  type ChunkObject,
  ChunkValueError,
  FLOAT_FIELDS,
  MAX_CHUNK_OBJECTS,
} from './chunk.js';
import { checkChunk, describe, isPlainObject, keyPath } from './rules.js';

/** How the JSON view writes the floats JSON cannot hold, and the bits it reads them back as. */
const NON_FINITE_BITS = new Map<unknown, number>([
  ['NaN', 0x7fc00000],
  ['Infinity', 0x7f800000],
  ['-Infinity', 0xff800000],
]);

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
