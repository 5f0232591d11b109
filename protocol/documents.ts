import { z } from 'zod';
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from './text.js';

/**
 * User documents: JSON a client owns and the server keeps as sent (an avatar loadout today).
 * The server checks an envelope and bounds, and otherwise stores every key verbatim, `__proto__`
 * and `constructor` included, as plain data.
 */

/** Containers (objects and arrays) may nest this deep; the document itself is level 1. */
export const MAX_DOCUMENT_DEPTH = 64;

/**
 * Whether `value` nests containers deeper than `maxDepth`. Iterative, so a hostile document
 * thousands of levels deep is refused without recursing once per level.
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, depth] = next;
    if (item === null || typeof item !== 'object') continue;
    if (depth > maxDepth) return true;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return false;
}

/**
 * Where the document (or a key in it) holds text the shared rule refuses, if anywhere. Only
 * called on depth-checked documents, so the recursion is bounded.
 */
function unstorablePath(value: unknown, path: (string | number)[]): (string | number)[] | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : path;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (!Array.isArray(value) && !isStorableText(key)) return path;
    const found = unstorablePath(item, [...path, Array.isArray(value) ? Number(key) : key]);
    if (found) return found;
  }
  return undefined;
}

const utf8 = new TextEncoder();

/** Bytes of a document's JSON serialization in UTF-8, as size caps count them. */
export function documentBytes(document: unknown): number {
  return utf8.encode(JSON.stringify(document)).byteLength;
}

export interface UserDocumentLimits {
  /** Cap on documentBytes of what is stored (`stored` of the accepted document). */
  maxBytes: number;
  /** The part of the document that is stored and counted; the whole document by default. */
  stored?: (document: Record<string, unknown>) => Record<string, unknown>;
}

/**
 * A schema that checks `envelope` (a zod object describing the keys the server cares about) plus
 * depth, size and the text rule, and then yields the document exactly as received. Parsing with
 * the envelope itself would rebuild the object and drop keys such as `__proto__`; this keeps the
 * envelope for validation messages and for the OpenAPI document only.
 */
export function userDocument<Envelope extends z.ZodObject>(envelope: Envelope, limits: UserDocumentLimits) {
  const stored = limits.stored ?? ((document) => document);
  const { $schema: _dialect, ...jsonSchema } = z.toJSONSchema(envelope, {
    io: 'input',
    unrepresentable: 'any',
  });
  return z
    .unknown()
    .superRefine((value, check) => {
      if (nestsDeeperThan(value, MAX_DOCUMENT_DEPTH)) {
        check.addIssue({
          code: 'custom',
          path: [],
          message: `must not nest objects or arrays more than ${MAX_DOCUMENT_DEPTH} levels deep`,
        });
        return;
      }
      const parsed = envelope.safeParse(value);
      if (!parsed.success) {
        for (const { path, message } of parsed.error.issues)
          check.addIssue({ code: 'custom', path, message });
        return;
      }
      const bytes = documentBytes(stored(value as Record<string, unknown>));
      if (bytes > limits.maxBytes) {
        check.addIssue({
          code: 'custom',
          path: [],
          message: `the document is ${bytes} bytes as JSON; at most ${limits.maxBytes} are allowed`,
        });
        return;
      }
      const path = unstorablePath(value, []);
      if (path) check.addIssue({ code: 'custom', path, message: UNSTORABLE_TEXT_MESSAGE });
    })
    .transform((value) => value as z.output<Envelope>)
    .meta({
      ...jsonSchema,
      // JSON Schema cannot count a document's bytes or bound its depth short of 64 nested
      // definitions, so the document states both caps in words and as extension keywords.
      description: [
        jsonSchema.description,
        `At most ${limits.maxBytes} bytes as JSON in UTF-8; objects and arrays nest at most ${MAX_DOCUMENT_DEPTH} levels deep.`,
      ]
        .filter(Boolean)
        .join(' '),
      'x-max-json-bytes': limits.maxBytes,
      'x-max-depth': MAX_DOCUMENT_DEPTH,
    });
}
