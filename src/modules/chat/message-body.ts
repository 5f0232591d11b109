import { MESSAGE_BODY_MAX } from '../../../protocol/chat.js';
import { trimmedText } from '../../platform/trimmed-text.js';

/**
 * The body a message is stored with, for every kind of chat: as other users are shown it (no
 * bidirectional controls, trimmed, empty when nothing visible is left), then 1-2000 characters.
 */
export function trimmedBody(raw: string): string {
  return trimmedText(raw, { path: 'body', name: 'message body', max: MESSAGE_BODY_MAX });
}
