/** The rules of a chunk's values, which the binary format and the JSON view both apply. */
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../storable-text.js';
import {
  type Chunk,
  type ChunkObject,
  ChunkValueError,
  FLOAT_FIELDS,
  MAX_ASSET_ID_BYTES,
  MAX_CHUNK_OBJECTS,
  MAX_ID_BYTES,
  MAX_PROPS_DEPTH,
} from './chunk.js';

export const utf8 = new TextEncoder();

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

export function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return isPlainObject(value) ? 'an object' : 'an object that is not plain';
  if (typeof value === 'string' || typeof value === 'function') return `a ${typeof value}`;
  return `${typeof value} ${String(value)}`;
}

export function keyPath(parent: string, key: string): string {
  if (!/^[A-Za-z_$][\w$]*$/.test(key)) return `${parent}[${JSON.stringify(key)}]`;
  return parent ? `${parent}.${key}` : key;
}

/**
 * What keeps `props` (named `path`) from being stored as JSON text that reads back the same, if
 * anything. Iterative, so hostile nesting is refused without recursing once per level; a cycle
 * is refused as too deep.
 */
export function propsProblem(props: unknown, path: string): [at: string, problem: string] | undefined {
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

export function textBytes(value: unknown, max: number, path: string): Uint8Array {
  if (typeof value !== 'string') throw new ChunkValueError(path, `must be a string, got ${describe(value)}`);
  // A string never takes fewer UTF-8 bytes than UTF-16 units, so a long one is refused unencoded.
  if (value.length > max) throw new ChunkValueError(path, `is longer than ${max} UTF-8 bytes`);
  if (!isStorableText(value)) throw new ChunkValueError(path, UNSTORABLE_TEXT_MESSAGE);
  const bytes = utf8.encode(value);
  if (bytes.length < 1 || bytes.length > max)
    throw new ChunkValueError(path, `is ${bytes.length} UTF-8 bytes; it must be 1..${max}`);
  return bytes;
}

export interface Checked {
  object: ChunkObject;
  id: Uint8Array;
  assetId: Uint8Array;
  propsText?: string;
}

/** Every rule the binary format puts on a chunk, checked before anything is written. */
export function checkChunk(chunk: Chunk): Checked[] {
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
