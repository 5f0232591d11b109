import { z } from 'zod';
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from './storable-text.js';

/** The shared text rule lives in storable-text.ts, which the chunk codec uses too. */
export { isStorableText, UNSTORABLE_TEXT_MESSAGE };

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
