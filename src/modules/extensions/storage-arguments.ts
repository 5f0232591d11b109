import { characterCount, isStorableText } from '../../../protocol/storable-text.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { ExtensionServiceError } from './service-error.js';

/**
 * The checks of `ctx.storage`'s arguments (docs/extensions.md, "ctx.storage"). Extensions are
 * plain JavaScript, so nothing here trusts a declared type: every bad argument throws
 * VALIDATION_FAILED naming it, before anything is read or written.
 */

/** The largest value, as JSON text in UTF-8. */
export const MAX_VALUE_BYTES = 64 * 1024;
/**
 * How deep arrays and objects may nest in a value. The contract's 64 KiB would allow some 32,000
 * levels, more than JSON.stringify's stack and Postgres' (max_stack_depth) can take, and PGlite
 * hangs on such text; no record needs a fraction of this.
 */
export const MAX_VALUE_DEPTH = 512;
const MAX_TEXT_CHARACTERS = 128;
export const DEFAULT_PAGE = 50;
const MAX_PAGE = 100;

const invalid = (message: string) => new ExtensionServiceError('VALIDATION_FAILED', message);

/**
 * A collection or key: 1-128 characters (code points, as the table's check counts them), without
 * U+0000 or unpaired surrogates, which a text column cannot hold as given.
 */
export function checkName(value: unknown, argument: 'collection' | 'key'): string {
  if (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= 2 * MAX_TEXT_CHARACTERS &&
    characterCount(value) <= MAX_TEXT_CHARACTERS &&
    isStorableText(value)
  ) {
    return value;
  }
  throw invalid(
    `${argument} must be text of 1 to ${MAX_TEXT_CHARACTERS} characters without U+0000 or unpaired surrogates.`,
  );
}

/** user_id: omitted or null for a global record, else a user's id (in its one spelling). */
export function checkUserId(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' && isId(value)) return canonicalId(value);
  throw invalid('user_id must be a user id (a UUID), null or omitted.');
}

/** version: omitted (unconditional), 0 (only if absent) or the version the record must be at. */
export function checkVersion(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (Number.isSafeInteger(value) && (value as number) >= 0) return value as number;
  throw invalid('version must be an integer of 0 or more, or omitted.');
}

/** limit: omitted (50) or 1-100. */
export function checkLimit(value: unknown): number {
  if (value === undefined) return DEFAULT_PAGE;
  if (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_PAGE)
    return value as number;
  throw invalid(`limit must be an integer from 1 to ${MAX_PAGE}, or omitted.`);
}

/** The options argument: omitted or an object (its fields checked by the functions above). */
export function checkOptions(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value === 'object' && value !== null && !Array.isArray(value))
    return value as Record<string, unknown>;
  throw invalid('options must be an object, or omitted.');
}

/**
 * The value as the JSON text stored. Only a JSON value is taken (null, booleans, finite numbers,
 * strings, arrays and plain objects of them), so what `get` gives back is what was put: the
 * silent changes of JSON.stringify (a Date turned into text, NaN into null, an undefined property
 * dropped, a Map into {}) are refused instead. A `__proto__` key is an own key like any other.
 */
export function jsonTextOf(value: unknown): string {
  checkJson(value, [], new Set());
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_VALUE_BYTES)
    throw invalid(`value is ${bytes} bytes as JSON; at most ${MAX_VALUE_BYTES} are stored.`);
  return text;
}

/** Throws for the first part of `value` that is no JSON value; `ancestors` are the arrays and objects above it. */
function checkJson(value: unknown, path: (string | number)[], ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (Number.isFinite(value)) return;
      throw notJson(path, 'is NaN or infinite, which JSON cannot carry');
    case 'object': {
      if (value === null) return;
      if (ancestors.has(value)) throw notJson(path, 'contains itself');
      if (ancestors.size >= MAX_VALUE_DEPTH)
        throw notJson(path, `nests deeper than ${MAX_VALUE_DEPTH} levels`);
      const array = Array.isArray(value);
      const prototype = Object.getPrototypeOf(value);
      if (!array && prototype !== Object.prototype && prototype !== null) {
        throw notJson(path, 'is an object other than a plain object or an array');
      }
      // JSON.stringify would write what the method returns instead.
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function')
        throw notJson(path, 'has a toJSON method');
      ancestors.add(value);
      // Indices rather than the array's own iteration: a hole of a sparse array reads undefined, refused.
      const names: (string | number)[] = array
        ? Array.from({ length: value.length }, (_item, i) => i)
        : Object.keys(value);
      for (const name of names) {
        path.push(name);
        checkJson((value as Record<string | number, unknown>)[name], path, ancestors);
        path.pop();
      }
      ancestors.delete(value);
      return;
    }
    default:
      throw notJson(path, `is ${value === undefined ? 'undefined' : `a ${typeof value}`}`);
  }
}

function notJson(path: readonly (string | number)[], reason: string): ExtensionServiceError {
  const where = path
    .map((name) => (typeof name === 'number' ? `[${name}]` : `[${JSON.stringify(name)}]`))
    .join('');
  return invalid(`value${where} ${reason}: a record holds a JSON value.`);
}
