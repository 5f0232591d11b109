import { z } from 'zod';
import { characterCount, isStorableText, UNSTORABLE_TEXT_MESSAGE } from './storable-text.js';

/** The shared text rule lives in storable-text.ts, which the chunk codec uses too. */
export { characterCount, isStorableText, UNSTORABLE_TEXT_MESSAGE };

/**
 * The explicit bidirectional controls: embeddings and overrides (U+202A-U+202E) and isolates
 * (U+2066-U+2069). They are removed from text other users are shown, not refused: they are
 * invisible, so a sender could not see what to take out, and keyboards and copy-paste from
 * right-to-left apps insert them unasked. Left in, an override shows characters in another
 * order than they are stored (a Trojan Source reordering: a link or a command that reads as
 * something else), and one left open reorders what a client draws after the text, such as the
 * next message or a name. Without them the Unicode bidirectional algorithm orders the visible
 * characters alone, the same way for every reader. The implicit marks (U+200E, U+200F, U+061C)
 * stay: they open nothing that could reach past the text, and right-to-left writing needs them.
 */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

/**
 * Text that shows nothing: whitespace and default-ignorable code points (zero-width space and
 * joiners, word joiner, byte-order mark, soft hyphen, variation selectors, Hangul fillers, tag
 * characters...). Such characters stay in the text (joiners build emoji and Persian words), but
 * a text of nothing else is empty.
 */
const NOTHING_SHOWN = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}]*$/u;

/** A text without its bidirectional controls, for fields kept as written otherwise. */
export function withoutBidiControls(value: string): string {
  return value.replace(BIDI_CONTROLS, '');
}

/** Whether a text shows nothing once its bidirectional controls are gone. */
export function showsNothing(value: string): boolean {
  return NOTHING_SHOWN.test(withoutBidiControls(value));
}

/**
 * `text(min, max)` that must also show something: a message of only whitespace, invisible
 * characters and bidirectional controls is empty. Declared in the schema (not only by the
 * service), so a client validating with it learns the rule before sending.
 */
export function visibleText(min: number, max: number) {
  return text(min, max).refine((value) => !showsNothing(value), 'must show at least one visible character');
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
        const length = characterCount(value);
        return length >= min && length <= max;
      },
      `must be ${min === 0 ? `at most ${max}` : `${min}-${max}`} characters`,
    )
    .meta({ ...(min > 0 ? { minLength: min } : {}), maxLength: max });
}

/**
 * A text the service keeps as shown (without bidirectional controls, trimmed) and holds to `max`
 * characters then, reading up to four times that raw. `visible`: it must show something.
 */
export function shownText(max: number, options: { visible: boolean }) {
  const raw = options.visible ? visibleText(1, 4 * max) : text(0, 4 * max);
  return raw.meta(shownAtMost(max));
}

/**
 * How the OpenAPI document states shownText's cap, for a text whose raw limit is set otherwise:
 * in words and as an extension keyword, which the service applies. No pattern can state it for
 * every validator: counting up to `max` characters around the uncounted ones takes a repetition
 * over 1000, which RE2 (Go) and Rust's regex refuse, and RE2's `\s` is ASCII whitespace only.
 * The schema's maxLength is the raw limit, looser than the cap, so a validator refuses nothing
 * the service accepts.
 */
export function shownAtMost(max: number) {
  return {
    description: `At most ${max} characters once shown: the service removes bidirectional controls and the surrounding whitespace, then applies this cap (x-max-shown-length); maxLength is the raw limit.`,
    'x-max-shown-length': max,
  };
}
