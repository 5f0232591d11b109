import { AppError, ErrorCode } from './errors.js';

/**
 * A text field as stored: trimmed, then held to `max` characters, counted as code points (an emoji
 * counts once) the way Postgres' char_length counts them. A required field left empty by the
 * trimming is refused; an optional one is absent (null). Refusals are 422 VALIDATION_FAILED
 * naming `path`; `name` is how the detail calls the field (default: the path).
 */
export function trimmedText(value: string, field: TextField): string;
export function trimmedText(value: string | undefined, field: TextField & { optional: true }): string | null;
export function trimmedText(
  value: string | undefined,
  field: TextField & { optional?: boolean },
): string | null {
  const trimmed = (value ?? '').trim();
  const length = [...trimmed].length;
  if (length === 0) {
    if (field.optional) return null;
    throw invalid(field, 'must not be empty after trimming');
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
