import { z } from 'zod';
import { LIST_CURSOR_MAX } from './lists.js';

/**
 * The shape of a keyset cursor ordered by (time, id), checked where a client can check it too:
 * base64url JSON of `[time, id]`, the time in UTC with microseconds naming a real instant. A
 * request schema that carries such a cursor refuses a forged one itself (422), so a request the
 * schema passes is one the list serves. The service decodes cursors with src/platform/cursor.ts,
 * which checks the time with `isTimeKey` from here.
 */

const TIME_KEY = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UTC time with microseconds as lists render it, naming a real instant (years 1-9999). */
export function isTimeKey(text: string): boolean {
  const parts = TIME_KEY.exec(text);
  if (!parts) return false;
  const [year, month, day, hour, minute, second] = parts.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return (
    year >= 1 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysIn(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59
  );
}

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

function isTimeIdCursor(cursor: string): boolean {
  let key: unknown;
  try {
    // base64url without padding, decoded with what browsers have too (protocol/ uses no Buffer).
    const binary = atob(cursor.replace(/-/g, '+').replace(/_/g, '/'));
    key = JSON.parse(
      new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))),
    );
  } catch {
    return false;
  }
  return (
    Array.isArray(key) &&
    key.length === 2 &&
    typeof key[0] === 'string' &&
    isTimeKey(key[0]) &&
    typeof key[1] === 'string' &&
    UUID.test(key[1])
  );
}

/** `cursor` of a list ordered by (time, id), refusing in the schema what no page gave out. */
export const timeIdCursor = z
  .string()
  .min(1)
  .max(LIST_CURSOR_MAX)
  .refine(isTimeIdCursor, 'is not a cursor of this list')
  .optional();

/** An id a list is filtered by: a UUID, or the schema refuses it (422). */
export const filterId = z.string().regex(UUID, 'must be an id');
