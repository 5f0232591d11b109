/**
 * A statement whose parameters are named (`:seller_id`) instead of numbered, for statements with
 * more than a handful: a `$1..$14` list must be kept in step with its array by hand, a name
 * cannot be. The text is turned into `$n` form once, when the repository module loads, so a call
 * costs one array of values; a name used twice is bound once. A `::type` cast is not a name, and
 * neither is text in a quoted literal's `:word` (write such a literal as a parameter).
 */
export interface NamedSql<Params> {
  /** The statement with `$1..$n` in place of the names, as the drivers take it. */
  readonly text: string;
  /** The name bound to each `$n`, in order. */
  readonly names: readonly (keyof Params & string)[];
}

const NAME = /(?<![:\w]):([a-z_][a-z0-9_]*)/gi;

export function namedSql<Params extends object>(source: string): NamedSql<Params> {
  const names: string[] = [];
  const text = source.replace(NAME, (_match, name: string) => {
    let index = names.indexOf(name);
    if (index < 0) index = names.push(name) - 1;
    return `$${index + 1}`;
  });
  if (names.length === 0) throw new Error(`namedSql: the statement names no parameter: ${source}`);
  return { text, names: names as (keyof Params & string)[] };
}

/** The values of `params` in the order of the statement's `$n`; a missing one is a bug, not a null. */
export function valuesOf<Params extends object>(statement: NamedSql<Params>, params: Params): unknown[] {
  return statement.names.map((name) => {
    const value = params[name];
    if (value === undefined) throw new Error(`namedSql: no value for :${name}`);
    return value;
  });
}
