/**
 * The one rule for text a client sends. Strings end up in Postgres text or jsonb, which cannot
 * hold U+0000, and lone UTF-16 surrogates would be stored as U+FFFD by the driver: refusing both
 * at the edge (422) keeps what is read back identical to what was written, and keeps a NUL from
 * turning into a database error deep inside a request. Chunk payloads follow it too, though they
 * are stored as bytes: their strings reach clients as JSON and game servers as text.
 *
 * This file imports nothing, so the chunk codec can use it and stay free of dependencies; and the
 * expression has no lookbehind, which browsers older than Safari 16.4 cannot parse.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const UNSTORABLE_TEXT_MESSAGE = 'must not contain U+0000 or unpaired surrogates';

export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && !LONE_SURROGATE.test(value);
}

/**
 * How many characters (Unicode code points) `value` has, as `[...value].length` counts them (a
 * surrogate pair once, a lone surrogate once) without building the array: the lengths of every
 * text field and message are checked with it.
 */
export function characterCount(value: string): number {
  let count = value.length;
  for (let i = 0; i < value.length - 1; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}
