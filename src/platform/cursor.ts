import { isTimeKey } from '../../protocol/cursors.js';
import { isStorableText } from '../../protocol/storable-text.js';
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
 * The ISO time (milliseconds, as Date.toISOString writes it) of a key `timeKeySql` rendered: the
 * same text a Date parsed from the column would give, since a Date truncates microseconds.
 */
export const timeOfKey = (key: string) => `${key.slice(0, 23)}Z`;

/**
 * The SQL condition "after the key" of a newest-first (time, id) keyset: the key binds as $2 (its
 * time, null for the first page) and $3 (its id), the order every keyset list here uses
 * (`timeIdKeyParams`), or as the two parameters `key` names in a statement with named ones. A
 * first page compares with the largest key there is rather than skipping the comparison ("$2 is
 * null or ..."): one row comparison stays an index condition in a generic plan, so a page is a
 * range scan of the list's index in its order, where the "or" made Postgres read every row of the
 * conversation and sort them (a DM history page cost 0.9 ms instead of 0.2).
 */
const MAX_UUID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

export const beforeTimeIdKey = (timeColumn: string, idColumn: string, key: [string, string] = ['$2', '$3']) =>
  `(${timeColumn}, ${idColumn}) < (coalesce(${key[0]}::timestamptz, 'infinity'), coalesce(${key[1]}::uuid, '${MAX_UUID}'))`;

/** A decoded (time, id) key as the $2 and $3 of `beforeTimeIdKey`: nulls on the first page. */
export const timeIdKeyParams = (
  key: readonly [string, string] | undefined,
): [string | null, string | null] => [key?.[0] ?? null, key?.[1] ?? null];

/**
 * The fields a cursor key is made of. Each checks what it decodes as the database will read it,
 * so a forged cursor that is well-formed JSON but names an impossible value (a 13th month, an id
 * that is no uuid, a number past int32) is a 422 here rather than a SQL error and a 500 later.
 */
export const cursorField = {
  /** A UTC time with microseconds as `timeKeySql` renders it, naming a real instant (years 1-9999). */
  time: (value: unknown): value is string => typeof value === 'string' && isTimeKey(value),
  id: (value: unknown): value is string => typeof value === 'string' && isId(value),
  /** A 32-bit signed integer (chunk coordinates). */
  int32: (value: unknown): value is number => Number.isInteger(value) && value === ((value as number) | 0),
  /** An integer JSON carries exactly (scores, which may be negative). */
  integer: (value: unknown): value is number => Number.isSafeInteger(value),
  /** A positive bigint id that JSON carries exactly (revision ids). */
  positive: (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0,
  /** A text the database can store (no NUL, no lone surrogate), of at most 256 characters (names). */
  text: (value: unknown): value is string =>
    typeof value === 'string' && value.length <= 256 && isStorableText(value),
  /** One of a fixed set of words (an enum column), so SQL never casts an unknown label. */
  oneOf:
    <const Word extends string>(words: readonly Word[]) =>
    (value: unknown): value is Word =>
      typeof value === 'string' && (words as readonly string[]).includes(value),
} as const;

type FieldCheck<T> = (value: unknown) => value is T;
type KeyOf<Fields extends readonly FieldCheck<unknown>[]> = {
  [I in keyof Fields]: Fields[I] extends FieldCheck<infer T> ? T : never;
};

/** The check of a key made of these fields, in order: what `decodeCursor` takes. */
export function cursorKey<const Fields extends readonly FieldCheck<unknown>[]>(
  ...fields: Fields
): (value: unknown) => value is KeyOf<Fields> {
  return (value): value is KeyOf<Fields> =>
    Array.isArray(value) && value.length === fields.length && fields.every((check, i) => check(value[i]));
}

/** The key of every list ordered by (timestamp, id). */
export const isTimeIdKey = cursorKey(cursorField.time, cursorField.id);
