/** A chunk of world content as the codec sees it: its shape, its limits and its errors. */

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

/** The float fields of an object, in the order the binary format writes them. */
export const FLOAT_FIELDS = [
  ['position', 3],
  ['rotation', 4],
  ['scale', 3],
] as const;
