import { AppError, ErrorCode } from './errors.js';

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

/**
 * A text as other users are shown it: without bidirectional controls, trimmed, and empty when
 * nothing visible is left.
 */
export function shownText(value: string): string {
  const trimmed = value.replace(BIDI_CONTROLS, '').trim();
  return NOTHING_SHOWN.test(trimmed) ? '' : trimmed;
}

/** A text without its bidirectional controls, for fields kept as written otherwise. */
export function withoutBidiControls(value: string): string {
  return value.replace(BIDI_CONTROLS, '');
}

/**
 * A text field as stored: as shown (`shownText`), then held to `max` characters, counted as code
 * points (an emoji counts once) the way Postgres' char_length counts them. A required field left
 * empty is refused; an optional one is absent (null). Refusals are 422 VALIDATION_FAILED naming
 * `path`; `name` is how the detail calls the field (default: the path).
 */
export function trimmedText(value: string, field: TextField): string;
export function trimmedText(value: string | undefined, field: TextField & { optional: true }): string | null;
export function trimmedText(
  value: string | undefined,
  field: TextField & { optional?: boolean },
): string | null {
  const trimmed = shownText(value ?? '');
  const length = [...trimmed].length;
  if (length === 0) {
    if (field.optional) return null;
    throw invalid(field, 'must not be empty after trimming (invisible characters do not count)');
  }
  if (length > field.max) throw invalid(field, `must be at most ${field.max} characters after trimming`);
  return trimmed;
}

interface TextField {
  path: string;
  max: number;
  name?: string;
}

const invalid = ({ path, name = path }: TextField, message: string) =>
  new AppError(ErrorCode.VALIDATION_FAILED, `The ${name} is not valid.`, { errors: [{ path, message }] });
