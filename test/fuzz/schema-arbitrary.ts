import fc from 'fast-check';
import { Hostile, hostileValue, objectWith, protoKey } from './values.js';

/** The part of JSON Schema the generated OpenAPI document and z.toJSONSchema use. */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
}

/**
 * Values the service knows (ids of real users, a real refresh token, a real username), by
 * property name: generated bodies use them often enough to get past "not found" into the rules.
 */
export type Dictionary = Record<string, readonly unknown[]>;

export interface SchemaContext {
  /** Resolves `#/components/schemas/...` references. */
  root?: { components?: { schemas?: Record<string, JsonSchema> } };
  dictionary: Dictionary;
}

/** Strings mostly small and printable, sometimes any code point, so valid-ish input reaches the service. */
function stringArbitrary(schema: JsonSchema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 40, 40));
  if (schema.pattern) {
    try {
      return fc
        .stringMatching(new RegExp(schema.pattern))
        .filter((value) => value.length >= minLength && value.length <= (schema.maxLength ?? value.length));
    } catch {
      // A pattern fast-check cannot invert falls back to plain strings, which exercise the 422 path.
    }
  }
  if (schema.format === 'email') return fc.emailAddress();
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ minLength, maxLength, unit: 'grapheme-ascii' }) },
    { weight: 1, arbitrary: fc.string({ minLength, maxLength, unit: 'grapheme' }) },
  );
}

function resolve(schema: JsonSchema, context: SchemaContext): JsonSchema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.split('/').pop() ?? '';
  return context.root?.components?.schemas?.[name] ?? {};
}

/** An arbitrary of values meant to satisfy `schema` (the valid half of every operation's inputs). */
export function schemaArbitrary(
  input: JsonSchema,
  context: SchemaContext,
  property?: string,
): fc.Arbitrary<unknown> {
  const schema = resolve(input, context);
  const generated = generatedArbitrary(schema, context);
  const known = property === undefined ? undefined : context.dictionary[property];
  if (!known?.length) return generated;
  return fc.oneof({ weight: 1, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: generated });
}

function generatedArbitrary(schema: JsonSchema, context: SchemaContext): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum?.length) return fc.constantFrom(...schema.enum);
  const union = schema.anyOf ?? schema.oneOf;
  if (union?.length) return fc.oneof(...union.map((part) => schemaArbitrary(part, context)));
  if (schema.allOf?.length) return schemaArbitrary(schema.allOf[0] as JsonSchema, context);
  if (Array.isArray(schema.type)) {
    return fc.oneof(...schema.type.map((type) => schemaArbitrary({ ...schema, type }, context)));
  }
  switch (schema.type) {
    case 'string':
      return stringArbitrary(schema);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(schemaArbitrary(schema.items ?? {}, context), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 8, 8)),
      });
    case 'object':
      return objectArbitrary(schema, context);
    default:
      return fc.jsonValue({ maxDepth: 3 });
  }
}

function objectArbitrary(schema: JsonSchema, context: SchemaContext): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(properties).map(([name, property]) => {
    const value = schemaArbitrary(property, context, name);
    return required.has(name)
      ? value.map((v) => [name, v] as [string, unknown])
      : fc.option(
          value.map((v) => [name, v] as [string, unknown]),
          { nil: undefined, freq: 2 },
        );
  });
  // Open objects (a loadout's slots, its extra keys) get a few keys of arbitrary JSON, which the service keeps.
  const open = schema.additionalProperties !== false && Object.keys(properties).length < 8;
  const extra = open
    ? fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 })
    : fc.constant({});
  return fc.tuple(fc.tuple(...fields), extra).map(([entries, more]) => {
    const present = entries.filter((entry): entry is [string, unknown] => entry !== undefined);
    return objectWith([...Object.entries(more).filter(([key]) => !(key in properties)), ...present]);
  });
}

/** Every place in a value where a mutation can land: the path and the container's kind. */
function containers(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (value instanceof Hostile) return [];
  if (Array.isArray(value)) return [path, ...value.flatMap((item, i) => containers(item, [...path, i]))];
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return [path, ...Object.keys(record).flatMap((key) => containers(record[key], [...path, key]))];
  }
  return [];
}

function at(value: unknown, path: (string | number)[]): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], value);
}

function setKey(target: unknown, key: string | number, replacement: unknown): void {
  Object.defineProperty(target, key, {
    value: replacement,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** One structural mutation applied to a generated valid value; returns the new root and its label. */
export const mutation = fc.record({
  kind: fc.constantFrom('replace', 'replace', 'replace', 'proto-key', 'drop-key', 'extra-key', 'whole'),
  hostile: hostileValue,
  spot: fc.nat(),
  key: fc.oneof(protoKey, fc.string({ minLength: 0, maxLength: 10 })),
});
export type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

/** Values of `valid` with one to three mutations applied, and the mutations' labels joined. */
export function mutated(valid: fc.Arbitrary<unknown>): fc.Arbitrary<{ value: unknown; label: string }> {
  return fc.tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([value, mutations]) => {
    let current = value;
    const labels: string[] = [];
    for (const m of mutations) {
      const next = applyMutation(current, m);
      current = next.value;
      labels.push(next.label);
    }
    return { value: current, label: labels.join('; ') };
  });
}

const describePath = (path: (string | number)[]) => (path.length ? path.join('.') : '(root)');

/**
 * Applies a mutation to a deep copy of `value`. Structured clone cannot keep own `__proto__`
 * keys, so the copy goes through a hand-written walk that defines keys instead of assigning them.
 */
export function applyMutation(value: unknown, m: Mutation): { value: unknown; label: string } {
  const root = copy(value);
  const spots = containers(root);
  if (m.kind === 'whole' || spots.length === 0)
    return { value: m.hostile, label: `whole=${m.hostile.label}` };
  const path = spots[m.spot % spots.length] as (string | number)[];
  const node = at(root, path);
  const keys = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node as object);
  const key = keys.length ? keys[m.spot % keys.length] : undefined;
  switch (m.kind) {
    case 'proto-key':
    case 'extra-key': {
      const name = m.kind === 'proto-key' ? (PROTO_CYCLE[m.spot % 3] as string) : m.key;
      if (Array.isArray(node)) node.push(m.hostile);
      else setKey(node, name, m.hostile);
      return { value: root, label: `${m.kind} ${describePath([...path, name])}=${m.hostile.label}` };
    }
    case 'drop-key':
      if (key === undefined || Array.isArray(node)) break;
      delete (node as Record<string, unknown>)[key];
      return { value: root, label: `drop ${describePath([...path, key])}` };
    default:
      if (key === undefined) break;
      setKey(node, key, m.hostile);
      return { value: root, label: `replace ${describePath([...path, key])}=${m.hostile.label}` };
  }
  return { value: m.hostile, label: `whole=${m.hostile.label}` };
}

const PROTO_CYCLE = ['__proto__', 'constructor', 'prototype'];

function copy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copy);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const record = value as Record<string, unknown>;
    return objectWith(Object.keys(record).map((key) => [key, copy(record[key])]));
  }
  return value;
}
