import { z } from 'zod';
import { userDocument } from './documents.js';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * The notification inbox (docs/notifications.md): what happened while a user was away, with read
 * state, each new one also pushed live on the user's recorded stream; and admin broadcasts.
 */

const tag = 'notifications';
const id = z.string().max(64);

export const NOTIFICATION_CODE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;
export const BROADCAST_CONTENT_MAX_BYTES = 4096;
/** The most ids one read or one broadcast names. */
export const READ_IDS_MAX = 100;
export const BROADCAST_USER_IDS_MAX = 1000;

export const notificationCode = z
  .string()
  .max(64)
  .regex(NOTIFICATION_CODE, 'must be a dotted lower-case name such as friend_request.received');

export const notificationSchema = z
  .object({
    id: z.string(),
    code: z.string(),
    subject: z.string(),
    content: z.record(z.string(), z.unknown()),
    sender_id: z.string().nullable(),
    created_at: z.string(),
    read_at: z.string().nullable(),
  })
  .meta({ id: 'Notification' });
export type Notification = z.infer<typeof notificationSchema>;

export const notificationsList = operation('notifications.list', {
  tag,
  summary: "The caller's notifications, newest first; `unread=true` lists only unread ones.",
  rest: { method: 'GET', path: '/api/notifications' },
  request: z.object({ unread: z.enum(['true', 'false']).optional(), ...listQuery }).strict(),
  response: pageOf(notificationSchema),
  errors: [401, 422],
});

export const notificationsUnreadCount = operation('notifications.unreadCount', {
  tag,
  summary: "How many of the caller's notifications are unread.",
  rest: { method: 'GET', path: '/api/notifications/unread-count' },
  response: z.object({ count: z.number().int() }),
  errors: [401],
});

export const notificationsRead = operation('notifications.read', {
  tag,
  summary:
    "Mark the caller's notifications read: exactly one of `ids` (1-100; ids that are not the caller's are ignored) or `all: true`. A read notification keeps its first read_at.",
  rest: { method: 'POST', path: '/api/notifications/read', status: 204 },
  request: z
    .object({
      ids: z.array(id).min(1).max(READ_IDS_MAX).optional(),
      all: z.literal(true).optional(),
    })
    .strict()
    .refine((body) => (body.ids === undefined) !== (body.all === undefined), {
      message: 'send exactly one of ids or all: true',
    }),
  response: z.null(),
  errors: [401, 422],
});

export const notificationsDelete = operation('notifications.delete', {
  tag,
  summary: "Delete one of the caller's notifications; another user's, or none, answers 404.",
  rest: { method: 'DELETE', path: '/api/notifications/:notification_id', status: 204 },
  request: z.object({ notification_id: id }).strict(),
  response: z.null(),
  errors: [401, 404, 422],
});

export const notificationsBroadcast = operation('notifications.admin.broadcast', {
  tag,
  summary:
    'Admins: notify some users (`user_ids`, 1-1000, written before the answer) or everyone (`all: true`, a background job that notifies each account once). Audited as notifications.broadcast.',
  rest: { method: 'POST', path: '/api/admin/notifications', status: 202 },
  request: z
    .object({
      user_ids: z.array(id).min(1).max(BROADCAST_USER_IDS_MAX).optional(),
      all: z.literal(true).optional(),
      code: notificationCode,
      subject: text(1, 200),
      content: userDocument(z.object({}).catchall(z.unknown()), {
        maxBytes: BROADCAST_CONTENT_MAX_BYTES,
      }).optional(),
    })
    .strict()
    .refine((body) => (body.user_ids === undefined) !== (body.all === undefined), {
      message: 'send exactly one of user_ids or all: true',
    }),
  response: z.object({ id: z.string() }),
  errors: [401, 403, 422],
});

/** The `notification` event: a new notification, on its user's recorded stream. */
export interface NotificationEventPayloads {
  notification: Notification;
}

export const notificationOperations = [
  notificationsList,
  notificationsUnreadCount,
  notificationsRead,
  notificationsDelete,
  notificationsBroadcast,
] as const;
