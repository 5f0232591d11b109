import { MESSAGE_BODY_MAX } from '../../../protocol/chat.js';
import { AppError, ErrorCode } from '../../platform/errors.js';

const invalidBody = (message: string) =>
  new AppError(ErrorCode.VALIDATION_FAILED, 'The message body is not valid.', {
    errors: [{ path: 'body', message }],
  });

/**
 * The body a message is stored with, for every kind of chat: trimmed, then 1-2000 characters.
 * Characters are code points (an emoji counts once), as the database's check counts them.
 */
export function trimmedBody(raw: string): string {
  const body = raw.trim();
  const length = [...body].length;
  if (length === 0) throw invalidBody('must not be empty after trimming');
  if (length > MESSAGE_BODY_MAX)
    throw invalidBody(`must be at most ${MESSAGE_BODY_MAX} characters after trimming`);
  return body;
}
