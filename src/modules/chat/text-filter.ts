import { englishDataset, englishRecommendedTransformers, RegExpMatcher } from 'obscenity';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { readingOf, spanInMessage } from './text-reading.js';

export type FilterMode = 'mask' | 'reject';

const LETTER = /\p{L}/u;

/** What the filter made of a body: the text to store, and whether words were masked. */
export interface Filtered {
  body: string;
  filtered: boolean;
}

/**
 * The text filter of chat messages: obscenity's English word list, matched through its
 * transformers (leetspeak, look-alike characters, repeated letters) against the body as
 * `readingOf` reads it (compatibility forms such as ⓕ and 𝓯 as plain letters, combining marks and
 * invisible characters dropped, small capitals and other look-alikes folded, letters spelled out
 * one by one joined), except matches without a letter (numbers). `mask` replaces each character
 * the sender wrote for a matched word with one `*`, so the body keeps its length in characters
 * and never grows past the limit it was checked against; `reject` refuses the message with 422
 * MESSAGE_REJECTED.
 */
export function createTextFilter(mode: FilterMode): (body: string) => Filtered {
  const matcher = new RegExpMatcher({ ...englishDataset.build(), ...englishRecommendedTransformers });
  const mayMatch = anyTermTest(matcher);
  return (body) => {
    const reading = readingOf(body);
    if (!mayMatch(reading.text)) return { body, filtered: false };
    // Leetspeak reads digits as letters ("455" as "ass"), but a match made of digits alone is a
    // number (a score, a price, a time), never a word: those are left alone.
    const spans = matcher
      .getAllMatches(reading.text)
      .filter(({ startIndex, endIndex }) => LETTER.test(reading.text.slice(startIndex, endIndex + 1)))
      .map(({ startIndex, endIndex }) => spanInMessage(reading, body, startIndex, endIndex));
    if (spans.length === 0) return { body, filtered: false };
    if (mode === 'reject') {
      throw new AppError(
        ErrorCode.MESSAGE_REJECTED,
        'The message contains words the text filter does not allow.',
        {
          errors: [{ path: 'body', message: 'contains disallowed words' }],
        },
      );
    }
    return { body: masked(body, spans), filtered: true };
  };
}

/** `text` with every character (code point) inside one of the spans replaced by `*`. */
function masked(text: string, spans: [start: number, end: number][]): string {
  spans.sort(([a], [b]) => a - b);
  let result = '';
  let copied = 0;
  for (const [start, end] of spans) {
    if (end <= copied) continue;
    const from = Math.max(start, copied);
    result += text.slice(copied, from);
    result += '*'.repeat([...text.slice(from, end)].length);
    copied = end;
  }
  return result + text.slice(copied);
}

/** The members of obscenity's RegExpMatcher (0.4) that `anyTermTest` reads; private in its types. */
interface MatcherInternals {
  blacklistedTerms: readonly { regExp: RegExp }[];
  blacklistMatcherTransformers: unknown;
  applyTransformers(input: string, transformers: unknown): [number[], string];
}

/**
 * Whether any of the matcher's terms matches the text as its transformers read it (leetspeak,
 * look-alikes, case, repeated letters), with one expression of all the terms. getAllMatches runs
 * each of the 119 terms' expressions over the text in turn through matchAll, which copies the
 * expression each time: about 24 µs and tens of KB of garbage per message, nearly always to find
 * nothing. This test costs about 4 µs; only text it passes goes on to getAllMatches (and its
 * whitelist). It can only say yes too often, never no: an alternation matches wherever one of
 * its terms does. Fails at startup, not silently, if an obscenity release renamed the members.
 */
export function anyTermTest(matcher: RegExpMatcher): (text: string) => boolean {
  const internals = matcher as unknown as Partial<MatcherInternals>;
  const { blacklistedTerms, blacklistMatcherTransformers: transformers } = internals;
  if (
    !Array.isArray(blacklistedTerms) ||
    !blacklistedTerms.every((term) => term.regExp instanceof RegExp) ||
    transformers === undefined ||
    typeof internals.applyTransformers !== 'function'
  ) {
    throw new Error('obscenity RegExpMatcher no longer has the members anyTermTest reads');
  }
  // The terms' own flags but `g`, whose position state would carry from one test to the next.
  const flags = new Set(blacklistedTerms.map((term) => term.regExp.flags.replace('g', '')));
  if (flags.size !== 1) throw new Error('obscenity RegExpMatcher terms no longer share their flags');
  const transform = internals.applyTransformers.bind(matcher);
  const anyTerm = new RegExp(
    blacklistedTerms.map((term) => `(?:${term.regExp.source})`).join('|'),
    [...flags][0],
  );
  return (text) => anyTerm.test(transform(text, transformers)[1]);
}
