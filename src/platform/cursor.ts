import { AppError, ErrorCode } from './errors.js';
import { isId } from './ids.js';

/**
 * Cursors of keyset pages: the key of the last item of a page, as base64url JSON. Clients treat
 * them as opaque; a cursor that does not decode to the key shape a list expects is a 422 naming
 * `cursor`, never a database error.
 */

export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/**
 * The key in `cursor`, checked by `isKey`; undefined when there is no cursor (the first page).
 * `field` names the request field that carried it, for the 422.
 */
export function decodeCursor<Key>(
  cursor: string | undefined,
  isKey: (value: unknown) => value is Key,
  field = 'cursor',
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
    errors: [{ path: field, message: 'is not a cursor of this list' }],
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

/**
 * Keys of lists ordered by (timestamp, id): the time goes out as text with microseconds, since a
 * Date keeps only milliseconds and two rows a fraction apart would be skipped. `timeKeySql`
 * renders a timestamptz column that way in a query; `isTimeIdKey` checks a decoded key.
 */
export const timeKeySql = (column: string) =>
  `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * The SQL condition "after the key" of a newest-first (time, id) keyset: the key binds as $2 (its
 * time, null for the first page) and $3 (its id), the order every keyset list here uses
 * (`timeIdKeyParams`).
 */
export const beforeTimeIdKey = (timeColumn: string, idColumn: string) =>
  `($2::timestamptz is null or (${timeColumn}, ${idColumn}) < ($2::timestamptz, $3::uuid))`;

/** A decoded (time, id) key as the $2 and $3 of `beforeTimeIdKey`: nulls on the first page. */
export const timeIdKeyParams = (
  key: readonly [string, string] | undefined,
): [string | null, string | null] => [key?.[0] ?? null, key?.[1] ?? null];

const TIME_KEY = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

export const isTimeIdKey = (value: unknown): value is [string, string] =>
  Array.isArray(value) &&
  value.length === 2 &&
  typeof value[0] === 'string' &&
  TIME_KEY.test(value[0]) &&
  typeof value[1] === 'string' &&
  isId(value[1]);
