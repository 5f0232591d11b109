import { z } from 'zod';
import { notificationsBroadcast } from '../../../protocol/notifications.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { AuditActor } from '../audit/index.js';

/**
 * What an extension's `ctx.notifications.send(user_id, notification)` takes (docs/extensions.md):
 * the admin broadcast's `code`, `subject` and `content`, checked by that operation's own field
 * schemas, since no transport's schema stands before an extension's call.
 */

/** An extension by its name: the actor of its sends' audit entries. */
export type ExtensionActor = Extract<AuditActor, { kind: 'extension' }>;

/** A notification as an extension asks for it. */
export interface ExtensionNotification {
  code: string;
  subject: string;
  /** A JSON object of at most 4 KiB; `{}` when omitted. */
  content?: Record<string, unknown>;
}

const { code, subject, content } = notificationsBroadcast.request.shape;

const sendArguments = z.object({
  user_id: z.string(),
  notification: z.object({ code, subject, content }).strict(),
});

type ExtensionSend = z.output<typeof sendArguments>;

/** The extension's arguments as it gave them, checked: VALIDATION_FAILED naming each bad field. */
export function extensionSendArguments(userId: unknown, notification: unknown): ExtensionSend {
  const parsed = sendArguments.safeParse({ user_id: userId, notification: asJson(notification) });
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  throw invalid(errors);
}

/**
 * The notification's content as JSON carries it, which is how it is stored: the broadcast's checks
 * count its JSON bytes, and a value JSON cannot write (a BigInt, a cycle) is the extension's bad
 * argument rather than a failure of the check. Anything but an object is left to the schema.
 */
function asJson(notification: unknown): unknown {
  if (typeof notification !== 'object' || notification === null) return notification;
  const given = notification as Record<string, unknown>;
  if (given.content === undefined) return given;
  const json = jsonOf(given.content);
  if (json === undefined) throw invalid([{ path: 'notification.content', message: 'must be a JSON object' }]);
  return { ...given, content: JSON.parse(json) };
}

/** JSON.stringify's text, or undefined where it has none (a function) or throws (a BigInt, a cycle). */
function jsonOf(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

function invalid(errors: { path: string; message: string }[]): AppError {
  const message = errors.map((error) => (error.path ? `${error.path}: ${error.message}` : error.message));
  return new AppError(ErrorCode.VALIDATION_FAILED, message.join('; '), { errors });
}
