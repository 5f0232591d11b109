import { AppError, ErrorCode } from './errors.js';

/**
 * Cursors of keyset pages: the key of the last item of a page, as base64url JSON. Clients treat
 * them as opaque; a cursor that does not decode to the key shape a list expects is a 422 naming
 * `cursor`, never a database error.
 */

export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** The key in `cursor`, checked by `isKey`; undefined when there is no cursor (the first page). */
export function decodeCursor<Key>(
  cursor: string | undefined,
  isKey: (value: unknown) => value is Key,
): Key | undefined {
  if (cursor === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  if (isKey(value)) return value;
  throw new AppError(ErrorCode.VALIDATION_FAILED, 'The cursor is not one this list gave out.', {
    errors: [{ path: 'cursor', message: 'is not a cursor of this list' }],
  });
}

/** The page of `rows` fetched with limit + 1: the first `limit` rows and the cursor after them. */
export function pageFrom<Row, Item>(
  rows: readonly Row[],
  limit: number,
  toItem: (row: Row) => Item,
  keyOf: (row: Row) => readonly (string | number)[],
): { items: Item[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(toItem),
    next_cursor: rows.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null,
  };
}
