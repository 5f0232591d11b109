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

export { decodeChunk, encodeChunk } from './chunk-codec/binary.js';
export {
  CHUNK_CODEC_VERSION,
  type Chunk,
  ChunkCodecError,
  type ChunkObject,
  ChunkValueError,
  MAX_ASSET_ID_BYTES,
  MAX_CHUNK_BYTES,
  MAX_CHUNK_OBJECTS,
  MAX_ID_BYTES,
  MAX_PROPS_DEPTH,
} from './chunk-codec/chunk.js';
export { chunkFromJson, chunkToJson } from './chunk-codec/json.js';
