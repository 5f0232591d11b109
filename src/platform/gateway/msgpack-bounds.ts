/**
 * A structural pass over a msgpack frame before it is decoded. The decoder allocates each
 * declared array length up front (`new Array(n)`) and has no depth limit, so a 27 KB frame of
 * nested `array16` headers declaring 65,535 items each asked it for gigabytes. This pass walks
 * the headers without building anything and refuses a frame whose containers nest deeper than
 * `maxDepth`, whose declared counts or lengths exceed the bytes left, or that ends before every
 * declared item arrived. A frame that passes holds every item it declares, each at least one
 * byte, so decoding it allocates in proportion to its size.
 */

/** Where and why a frame breaks the bounds. */
export interface BoundsProblem {
  offset: number;
  reason: string;
}

/**
 * Per head byte (tables, since this runs on every frame): the size of a fixed-width value (nil,
 * booleans, numbers, fixext with its type byte), and the bytes of the length field of a value
 * with an explicit length (bin, ext, str, array, map). 0 where it does not apply.
 */
const FIXED_SIZE = new Uint8Array(256);
const LENGTH_WIDTH = new Uint8Array(256);
// biome-ignore format: a table reads better in rows
for (const [head, size] of [
  [0xc0, 1], [0xc2, 1], [0xc3, 1], [0xca, 5], [0xcb, 9], [0xcc, 2], [0xcd, 3], [0xce, 5], [0xcf, 9],
  [0xd0, 2], [0xd1, 3], [0xd2, 5], [0xd3, 9], [0xd4, 3], [0xd5, 4], [0xd6, 6], [0xd7, 10], [0xd8, 18],
]) FIXED_SIZE[head as number] = size as number;
// biome-ignore format: a table reads better in rows
for (const [head, width] of [
  [0xc4, 1], [0xc5, 2], [0xc6, 4], [0xc7, 1], [0xc8, 2], [0xc9, 4], [0xd9, 1], [0xda, 2], [0xdb, 4],
  [0xdc, 2], [0xdd, 4], [0xde, 2], [0xdf, 4],
]) LENGTH_WIDTH[head as number] = width as number;

/** The big-endian unsigned integer of `width` bytes at `at`. */
function readLength(bytes: Uint8Array, at: number, width: number): number {
  let value = 0;
  for (let i = 0; i < width; i++) value = value * 256 + (bytes[at + i] as number);
  return value;
}

export class MsgpackBounds {
  /** Items still expected by each open container, innermost last. */
  private readonly open: Float64Array;

  constructor(private readonly maxDepth: number) {
    this.open = new Float64Array(maxDepth);
  }

  check(bytes: Uint8Array): BoundsProblem | undefined {
    const end = bytes.byteLength;
    const open = this.open;
    let depth = 0;
    let pos = 0;
    while (pos < end) {
      const head = bytes[pos] as number;
      // Each branch sets the header's size and either the items it opens or the bytes it carries.
      let size = 1;
      let container = false;
      let items = 0;
      let payload = 0;
      if (head < 0x80 || head >= 0xe0) {
        // positive or negative fixint
      } else if (head < 0xa0) {
        container = true;
        items = head < 0x90 ? (head - 0x80) * 2 : head - 0x90;
      } else if (head < 0xc0) payload = head - 0xa0;
      else if (FIXED_SIZE[head] !== 0) size = FIXED_SIZE[head] as number;
      else {
        const width = LENGTH_WIDTH[head] as number;
        if (width === 0) return { offset: pos, reason: `byte 0x${head.toString(16)} is not msgpack` };
        // ext headers carry a type byte after the length.
        size = 1 + width + (head >= 0xc7 && head <= 0xc9 ? 1 : 0);
        if (pos + size > end) return { offset: pos, reason: 'the frame ends inside a header' };
        const length = readLength(bytes, pos + 1, width);
        container = head >= 0xdc;
        if (!container) payload = length;
        else items = head >= 0xde ? length * 2 : length;
      }
      const left = end - pos - size;
      if (left < 0) return { offset: pos, reason: 'the frame ends inside a value' };
      if (items > left || payload > left) {
        return { offset: pos, reason: `a header declares ${items || payload} with ${left} bytes left` };
      }
      // An empty container counts as a level too, as it does for user documents.
      if (container && depth === this.maxDepth) {
        return { offset: pos, reason: `containers nest more than ${this.maxDepth} levels deep` };
      }
      pos += size + payload;
      if (items > 0) {
        open[depth++] = items;
        continue;
      }
      // One value is complete, and so is every container it was the last item of.
      while (depth > 0) {
        open[depth - 1] = (open[depth - 1] as number) - 1;
        if ((open[depth - 1] as number) > 0) break;
        depth--;
      }
      if (depth === 0 && pos < end) return { offset: pos, reason: 'bytes follow the frame' };
    }
    if (depth > 0 || end === 0) return { offset: end, reason: 'the frame ends before its last value' };
    return undefined;
  }
}
