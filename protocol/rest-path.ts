import { pathParams } from './operation.js';

/** The names of a path's `:name` segments, as a union (`'user_id' | 'role'`); never without any. */
export type PathParamsOf<Path extends string> = Path extends `${string}:${infer Name}/${infer Rest}`
  ? Name | PathParamsOf<`/${Rest}`>
  : Path extends `${string}:${infer Name}`
    ? Name
    : never;

/** What fills a path's segments: a value for each of its `:name` segments. */
export type PathValues<Path extends string> = Readonly<Record<PathParamsOf<Path>, string>>;

/** An operation, or a plain route, by the REST path it declares. */
export interface DeclaredPath<Path extends string = string> {
  readonly name?: string;
  readonly rest: { readonly path: Path };
}

/**
 * The declared REST path of `declared` with each `:name` segment filled from `values`, encoded so
 * that it stays one segment whatever it holds (`/`, `?`, `#`, spaces). A segment without a value
 * is a caller's mistake, refused here rather than sent as a path that names another route.
 */
export function pathOf<const Path extends string>(
  declared: DeclaredPath<Path>,
  ...[values]: PathParamsOf<Path> extends never ? [values?: PathValues<Path>] : [values: PathValues<Path>]
): string {
  const path = declared.rest.path;
  const given = (values ?? {}) as Readonly<Record<string, string | undefined>>;
  for (const name of pathParams(path)) {
    if (typeof given[name] !== 'string') {
      throw new Error(`${declared.name ?? path} needs a value for its path segment :${name}.`);
    }
  }
  return path.replace(/:([A-Za-z0-9_]+)/g, (_segment, name: string) =>
    encodeURIComponent(given[name] as string),
  );
}
