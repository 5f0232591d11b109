import type { Notification } from '../../../protocol/notifications.js';
import { type EventBus, userTopic } from '../../platform/bus.js';
import { type Ctx, callerOf, requireRole } from '../../platform/context.js';
import { decodeCursor, encodeCursor } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId, newId } from '../../platform/ids.js';
import type { Logger } from '../../platform/log.js';
import type { AuditApi } from '../audit/index.js';
import type { UsersApi } from '../users/index.js';
import { type ExtensionActor, extensionSendArguments } from './extension-send.js';
import {
  deleteNotification,
  insertBroadcast,
  markRead,
  type NotificationRow,
  notificationsPage,
  storeNotifications,
  unreadCount,
} from './notifications.repository.js';

/** A notification another module asks for, in its own transaction. */
export interface NotificationRequest {
  userId: string;
  code: string;
  subject: string;
  content?: Record<string, unknown>;
  senderId?: string | null;
}

export interface NotificationsDeps {
  bus: EventBus;
  audit: AuditApi;
  users: Pick<UsersApi, 'existingUserIds'>;
  maxPerUser: number;
  /** A broadcast to everyone committed: this node's broadcast job starts on it now. */
  broadcastAccepted(): void;
}

const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

export const viewOf = (row: NotificationRow): Notification => ({
  id: row.id,
  code: row.code,
  subject: row.subject,
  content: row.content,
  sender_id: row.sender_id,
  created_at: row.created_at.toISOString(),
  read_at: row.read_at?.toISOString() ?? null,
});

/**
 * The inbox (docs/notifications.md). Notifications are stored in the transaction of their cause
 * (`store`, for other modules and broadcasts) and pushed live once that transaction committed
 * (`announce`), as the `notification` event on each recipient's recorded stream.
 */
export class NotificationsService {
  constructor(private readonly deps: NotificationsDeps) {}

  /**
   * Stores notifications in `tx` (skipping users that no longer exist); announce them after the
   * commit. `inboxLocked`: the caller's statement took their users' locks (`inboxLockSql`).
   */
  store(
    tx: DataAccess,
    requests: readonly NotificationRequest[],
    at: Date,
    inboxLocked = false,
  ): Promise<NotificationRow[]> {
    return storeNotifications(
      tx,
      requests.map((request) => ({
        id: newId(),
        userId: request.userId,
        code: request.code,
        subject: request.subject,
        contentJson: JSON.stringify(request.content ?? {}),
        senderId: request.senderId ?? null,
        createdAt: at,
      })),
      this.deps.maxPerUser,
      inboxLocked,
    );
  }

  /** Pushes committed notifications to their users' sockets on every node. */
  async announce(rows: readonly NotificationRow[], log: Pick<Logger, 'warn'>): Promise<void> {
    await this.deps.bus.publishAllCommitted(
      rows.map((row) => ({ topics: userTopic(row.user_id), event: { t: 'notification', d: viewOf(row) } })),
      log,
    );
  }

  /**
   * An extension's `ctx.notifications.send`: one notification from the system (`sender_id` null)
   * to an existing user, in a transaction of its own, announced once it committed. Arguments are
   * the extension's, checked here; a user that does not exist gets nothing and is NOT_FOUND.
   * Only admins send arbitrary notifications otherwise (the broadcast), so the send is audited as
   * theirs are, with the extension as actor, in the notification's transaction.
   */
  async send(
    data: DataAccess,
    actor: ExtensionActor,
    userId: unknown,
    notification: unknown,
    log: Pick<Logger, 'warn'>,
  ): Promise<Notification> {
    const { user_id, notification: asked } = extensionSendArguments(userId, notification);
    const noSuchUser = () => new AppError(ErrorCode.NOT_FOUND, 'No user has that id.');
    if (!isId(user_id)) throw noSuchUser();
    const row = await transaction(data, async (tx) => {
      // store skips a user that does not exist (also one deleted meanwhile), so none stored is the answer.
      const [stored] = await this.store(tx, [{ userId: canonicalId(user_id), ...asked }], new Date());
      if (!stored) throw noSuchUser();
      await this.deps.audit.record(tx, {
        actor,
        action: 'notifications.send',
        target: { type: 'user', id: stored.user_id },
        before: null,
        // The content is the extension's payload for the user, not what the log reviews.
        after: { notification_id: stored.id, code: stored.code, subject: stored.subject },
      });
      return stored;
    });
    await this.announce([row], log);
    return viewOf(row);
  }

  async list(ctx: Ctx, query: { unread?: 'true' | 'false'; limit: number; cursor?: string }) {
    const caller = callerOf(ctx);
    const key = decodeCursor(query.cursor, isNotificationKey);
    const after = key && { createdAt: key[0], id: key[1] };
    const rows = await notificationsPage(
      ctx.data,
      caller.id,
      query.unread === 'true',
      after,
      query.limit + 1,
    );
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return {
      items: page.map(viewOf),
      next_cursor:
        rows.length > query.limit && last ? encodeCursor([last.created_at.toISOString(), last.id]) : null,
    };
  }

  async unreadCount(ctx: Ctx) {
    return { count: await unreadCount(ctx.data, callerOf(ctx).id) };
  }

  async read(ctx: Ctx, input: { ids?: string[]; all?: true }): Promise<void> {
    const caller = callerOf(ctx);
    const ids = input.all ? 'all' : [...new Set((input.ids ?? []).filter(isId).map(canonicalId))];
    if (ids !== 'all' && ids.length === 0) return;
    await markRead(ctx.data, caller.id, ids, ctx.now());
  }

  async delete(ctx: Ctx, id: string): Promise<void> {
    const caller = callerOf(ctx);
    if (!isId(id) || !(await deleteNotification(ctx.data, caller.id, canonicalId(id))))
      throw new AppError(ErrorCode.NOT_FOUND, 'You have no such notification.');
  }

  /**
   * An admin's broadcast: to some users now (before the answer), or to everyone through the
   * broadcast job (BroadcastJob), which visits each account once. Audited in the same transaction.
   */
  async broadcast(
    ctx: Ctx,
    input: { user_ids?: string[]; all?: true; code: string; subject: string; content?: unknown },
  ) {
    const caller = requireRole(ctx, 'admin');
    const id = newId();
    const now = ctx.now();
    const content = (input.content ?? {}) as Record<string, unknown>;
    const recipients = input.all
      ? 'all'
      : await this.deps.users.existingUserIds(ctx.data, [
          ...new Set((input.user_ids ?? []).filter(isId).map(canonicalId)),
        ]);
    const stored = await transaction(ctx.data, async (tx) => {
      // To everyone: the broadcast job writes them; to some: written here, before the answer.
      if (recipients === 'all')
        await insertBroadcast(tx, {
          id,
          code: input.code,
          subject: input.subject,
          contentJson: JSON.stringify(content),
          createdAt: now,
        });
      const rows =
        recipients === 'all'
          ? []
          : await this.store(
              tx,
              recipients.map((userId) => ({ userId, code: input.code, subject: input.subject, content })),
              now,
            );
      await this.deps.audit.record(tx, {
        actor: { kind: 'user', id: caller.id },
        action: 'notifications.broadcast',
        target: { type: 'notification_broadcast', id },
        before: null,
        after: {
          code: input.code,
          subject: input.subject,
          recipients: recipients === 'all' ? 'all' : rows.length,
        },
      });
      return rows;
    });
    if (recipients === 'all') this.deps.broadcastAccepted();
    await this.announce(stored, ctx.log);
    return { id };
  }
}

/** A notifications page's key: the last one's time and id. */
const isNotificationKey = (value: unknown): value is [string, string] =>
  Array.isArray(value) &&
  value.length === 2 &&
  typeof value[0] === 'string' &&
  TIME.test(value[0]) &&
  !Number.isNaN(Date.parse(value[0])) &&
  typeof value[1] === 'string' &&
  isId(value[1]);
