import { characterCount, showsNothing, withoutBidiControls } from '../../protocol/text.js';
import { AppError, ErrorCode } from './errors.js';

export { withoutBidiControls };

/**
 * A text as other users are shown it: without bidirectional controls, trimmed, and empty when
 * nothing visible is left.
 */
export function shownText(value: string): string {
  const trimmed = withoutBidiControls(value).trim();
  return showsNothing(trimmed) ? '' : trimmed;
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
  const length = characterCount(trimmed);
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
