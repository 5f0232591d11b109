import {
  asteriskCensorStrategy,
  englishDataset,
  englishRecommendedTransformers,
  RegExpMatcher,
  TextCensor,
} from 'obscenity';
import { AppError, ErrorCode } from '../../platform/errors.js';

export type FilterMode = 'mask' | 'reject';

const LETTER = /\p{L}/u;

/** What the filter made of a body: the text to store, and whether words were masked. */
export interface Filtered {
  body: string;
  filtered: boolean;
}

/**
 * The text filter of chat messages: obscenity's English word list, matched through its
 * transformers (leetspeak, look-alike characters, repeated letters), except matches without a
 * letter (numbers). `mask` replaces each matched
 * character with `*`, so the length never grows past the limit the body was checked against;
 * `reject` refuses the message with 422 MESSAGE_REJECTED.
 */
export function createTextFilter(mode: FilterMode): (body: string) => Filtered {
  const matcher = new RegExpMatcher({ ...englishDataset.build(), ...englishRecommendedTransformers });
  const censor = new TextCensor().setStrategy(asteriskCensorStrategy());
  return (body) => {
    // Leetspeak reads digits as letters ("455" as "ass"), but a match made of digits alone is a
    // number (a score, a price, a time), never a word: those are left alone.
    const matches = matcher
      .getAllMatches(body)
      .filter(({ startIndex, endIndex }) => LETTER.test(body.slice(startIndex, endIndex + 1)));
    if (matches.length === 0) return { body, filtered: false };
    if (mode === 'reject') {
      throw new AppError(
        ErrorCode.MESSAGE_REJECTED,
        'The message contains words the text filter does not allow.',
        {
          errors: [{ path: 'body', message: 'contains disallowed words' }],
        },
      );
    }
    return { body: censor.applyTo(body, matches), filtered: true };
  };
}
