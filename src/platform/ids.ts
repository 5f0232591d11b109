import { v7 as uuidv7 } from 'uuid';

/** New ids are UUID v7: unique without coordination and ordered by creation time, which keeps indexes compact. */
export function newId(): string {
  return uuidv7();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Ids are opaque to clients, so a malformed one is simply an id that does not exist: services
 * check this before querying, because Postgres would reject it as a uuid syntax error.
 */
export function isId(value: string): boolean {
  return UUID.test(value);
}

/**
 * The one spelling of an id: a UUID in lower case (the output form of RFC 9562), anything else
 * unchanged. Postgres matches uuids case-insensitively, so without this an upper-case id would
 * find its user but be answered, or subscribed, under a second spelling.
 */
export function canonicalId(value: string): string {
  return isId(value) ? value.toLowerCase() : value;
}

/** A client-given id in its one spelling, or the 404 `notFound` gives (a malformed id names nothing). */
export function idOr(value: string, notFound: () => Error): string {
  if (!isId(value)) throw notFound();
  return canonicalId(value);
}

/**
 * A Postgres array literal of uuids, bound as one parameter (the query builder would expand a JS
 * array into a list of placeholders). Only well-formed uuids are accepted, so nothing needs quoting.
 */
export function toUuidArray(ids: readonly string[]): string {
  if (!ids.every(isId)) throw new Error('toUuidArray takes validated ids only.');
  return `{${ids.join(',')}}`;
}
