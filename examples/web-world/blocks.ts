import { decodeChunk, encodeChunk } from '@atrium/client/chunk-codec';

/**
 * The voxel world of this page, kept in the chunk codec: a chunk (x, 0, z) of the room `main` holds
 * the blocks of a 16 x 16 column area as objects, one per block, each with its world position
 * and `block:<type>` as its asset id. Any other client reads the same chunks as plain objects.
 */

export const CHUNK_SIZE = 16;
/** Blocks are placed between these heights. */
export const MIN_Y = 0;
export const MAX_Y = 31;

export const BLOCK_TYPES = ['grass', 'dirt', 'stone', 'wood', 'brick', 'glass'] as const;
export type BlockType = (typeof BLOCK_TYPES)[number];
export const BLOCK_COLORS: Record<BlockType, number> = {
  grass: 0x5fa843,
  dirt: 0x8a5a35,
  stone: 0x8d8d8d,
  wood: 0xb5874a,
  brick: 0xb0443a,
  glass: 0x9fd8f0,
};

export interface Block {
  x: number;
  y: number;
  z: number;
  type: BlockType;
}

const ASSET_PREFIX = 'block:';
const IDENTITY = Float32Array.of(0, 0, 0, 1);
const UNIT = Float32Array.of(1, 1, 1);

export const blockKey = (x: number, y: number, z: number): string => `${x},${y},${z}`;
export const chunkKey = (cx: number, cz: number): string => `${cx},${cz}`;

/** The chunk coordinates (x, z; y is always 0) holding the block column at x, z. */
export function chunkOf(x: number, z: number): { cx: number; cz: number } {
  return { cx: Math.floor(x / CHUNK_SIZE), cz: Math.floor(z / CHUNK_SIZE) };
}

function isBlockType(value: string): value is BlockType {
  return (BLOCK_TYPES as readonly string[]).includes(value);
}

/** The blocks of a chunk's codec bytes. Objects that are not this page's blocks are left out, not refused. */
export function blocksOf(payload: Uint8Array): Block[] {
  const blocks: Block[] = [];
  for (const object of decodeChunk(payload).objects) {
    const type = object.asset_id.slice(ASSET_PREFIX.length);
    if (!object.asset_id.startsWith(ASSET_PREFIX) || !isBlockType(type)) continue;
    const [x = 0, y = 0, z = 0] = object.position;
    blocks.push({ x: Math.round(x), y: Math.round(y), z: Math.round(z), type });
  }
  return blocks;
}

/** Codec bytes for these blocks. A new Uint8Array: the frame's schema wants one backed by an ArrayBuffer. */
export function payloadOf(blocks: Iterable<Block>): Uint8Array<ArrayBuffer> {
  const objects = [...blocks].map(({ x, y, z, type }) => ({
    id: blockKey(x, y, z),
    asset_id: `${ASSET_PREFIX}${type}`,
    position: Float32Array.of(x, y, z),
    rotation: IDENTITY,
    scale: UNIT,
  }));
  return new Uint8Array(encodeChunk({ objects }));
}

/**
 * The ground a new world starts with: 2 x 2 chunks of gentle hills (grass over dirt, a little
 * stone), about 40 KiB a chunk, under the gateway's 64 KiB frame.
 */
export function starterTerrain(): Map<string, Block[]> {
  const chunks = new Map<string, Block[]>();
  for (let x = 0; x < 2 * CHUNK_SIZE; x++) {
    for (let z = 0; z < 2 * CHUNK_SIZE; z++) {
      const height = Math.max(1, 2 + Math.round(Math.sin(x / 4) + Math.cos(z / 5)));
      const { cx, cz } = chunkOf(x, z);
      const column = chunks.get(chunkKey(cx, cz)) ?? [];
      for (let y = 0; y < height; y++) {
        const type: BlockType = y === height - 1 ? 'grass' : y === 0 && (x + z) % 7 === 0 ? 'stone' : 'dirt';
        column.push({ x, y, z, type });
      }
      chunks.set(chunkKey(cx, cz), column);
    }
  }
  return chunks;
}
