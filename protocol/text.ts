import { z } from 'zod';

/**
 * The one rule for text a client sends. Strings end up in Postgres text or jsonb, which cannot
 * hold U+0000, and lone UTF-16 surrogates would be stored as U+FFFD by the driver: refusing both
 * at the edge (422) keeps what is read back identical to what was written, and keeps a NUL from
 * turning into a database error deep inside a request.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const UNSTORABLE_TEXT_MESSAGE = 'must not contain U+0000 or unpaired surrogates';

export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && !LONE_SURROGATE.test(value);
}

/**
 * A text field of `min` to `max` characters under the shared rule. Lengths count characters
 * (Unicode code points), as Postgres char_length and JSON Schema's maxLength do, not UTF-16
 * units: an emoji counts once.
 */
export function text(min: number, max: number) {
  return z
    .string()
    .refine(isStorableText, UNSTORABLE_TEXT_MESSAGE)
    .refine(
      (value) => {
        const length = [...value].length;
        return length >= min && length <= max;
      },
      `must be ${min === 0 ? `at most ${max}` : `${min}-${max}`} characters`,
    )
    .meta({ ...(min > 0 ? { minLength: min } : {}), maxLength: max });
}
