/**
 * A name search as SQL matches it (docs/groups.md, "Search"): the lower-cased query as a LIKE
 * prefix (its wildcards escaped), and each of its words as a tsquery prefix; undefined when the
 * query is blank (every row). A `gin (to_tsvector('simple', name))` index serves the words and a
 * `(lower(name) collate "C")` index the prefix.
 */
export interface NameSearch {
  prefix: string;
  words: string | null;
}

/** At most this many words of a search query count; more only narrow an already narrow search. */
const SEARCH_WORDS_MAX = 8;

export function searchTerms(q: string | undefined): NameSearch | undefined {
  const query = q?.trim().toLowerCase();
  if (!query) return undefined;
  const words = query
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0)
    .slice(0, SEARCH_WORDS_MAX);
  return {
    prefix: `${query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
    words: words.length > 0 ? words.map((word) => `${word}:*`).join(' & ') : null,
  };
}
