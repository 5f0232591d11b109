import {
  type Notification,
  notificationsBroadcast,
  notificationsDelete,
  notificationsList,
  notificationsRead,
  notificationsUnreadCount,
} from '../../../protocol/notifications.js';
import type { DataAccess } from '../../platform/data-access.js';
import type { Logger } from '../../platform/log.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import type { AuditApi } from '../audit/index.js';
import type { UsersApi } from '../users/index.js';
import { BroadcastJob } from './broadcast-job.js';
import type { ExtensionActor } from './extension-send.js';
import type { NotificationRow } from './notifications.repository.js';
import { type NotificationRequest, NotificationsService } from './notifications.service.js';

export type { ExtensionNotification } from './extension-send.js';
export { inboxLockSql } from './notifications.repository.js';
export type { NotificationRequest } from './notifications.service.js';

/**
 * How often each node looks for a broadcast to everyone to continue when nothing woke it: the node
 * that accepts a broadcast starts its job on it at once, so the pass only picks up what a node
 * stopped midway left.
 */
const BROADCAST_INTERVAL_MS = 30_000;

/**
 * What other modules use of the inbox: a notification is stored in the transaction of its cause,
 * and announced to its user's sockets once that transaction committed.
 */
export interface NotificationsApi {
  /** `inboxLocked`: the caller's statement already took each recipient's `inboxLockSql`. */
  store(
    tx: DataAccess,
    requests: readonly NotificationRequest[],
    at: Date,
    inboxLocked?: boolean,
  ): Promise<NotificationRow[]>;
  announce(rows: readonly NotificationRow[], log: Pick<Logger, 'warn'>): Promise<void>;
  /**
   * Server extensions' `ctx.notifications.send`: checks the extension's arguments, stores one
   * notification in its own transaction, audited with `actor` (the extension), and announces it;
   * answers it as the inbox lists it.
   */
  send(
    data: DataAccess,
    actor: ExtensionActor,
    userId: unknown,
    notification: unknown,
    log: Pick<Logger, 'warn'>,
  ): Promise<Notification>;
  /** Runs the broadcast job until no broadcast to everyone is left (tests). */
  runBroadcasts(): Promise<void>;
}

/** The notification inbox and admin broadcasts (docs/notifications.md). */
export const notificationsModule = defineModule({
  name: 'notifications',
  tables: ['notifications', 'notification_inboxes', 'notification_broadcasts'],
  needs: ['users', 'audit'],
  setup({ config, bus, db, log }, { users, audit }: { users: UsersApi; audit: AuditApi }) {
    const notifications = new NotificationsService({
      bus,
      audit,
      users,
      maxPerUser: config.NOTIFICATIONS_MAX_PER_USER,
      broadcastAccepted: () => job.wake(),
    });
    const job = new BroadcastJob({
      data: () => db.data,
      notifications,
      users,
      log,
      clock: () => new Date(),
      intervalMs: BROADCAST_INTERVAL_MS,
    });
    const api: NotificationsApi = {
      store: (tx, requests, at, inboxLocked) => notifications.store(tx, requests, at, inboxLocked),
      announce: (rows, announceLog) => notifications.announce(rows, announceLog),
      send: (data, actor, userId, notification, sendLog) =>
        notifications.send(data, actor, userId, notification, sendLog),
      runBroadcasts: () => job.runUntilDone(),
    };
    return {
      api,
      operations: [
        serve(notificationsList, (ctx, query) => notifications.list(ctx, query)),
        serve(notificationsUnreadCount, (ctx) => notifications.unreadCount(ctx)),
        serve(notificationsRead, (ctx, input) => notifications.read(ctx, input)),
        serve(notificationsDelete, (ctx, { notification_id }) => notifications.delete(ctx, notification_id)),
        serve(notificationsBroadcast, (ctx, input) => notifications.broadcast(ctx, input)),
      ],
      async start() {
        job.start();
      },
      stop: () => job.stop(),
    };
  },
});
