import { type DataAccess, transaction } from '../../platform/data-access.js';
import type { Logger } from '../../platform/log.js';
import { RepeatingPass } from '../../platform/repeating-pass.js';
import type { UsersApi } from '../users/index.js';
import { advanceBroadcast, claimBroadcast, type NotificationRow } from './notifications.repository.js';
import type { NotificationsService } from './notifications.service.js';

/** Accounts one transaction notifies. */
const BATCH = 500;

export interface BroadcastJobOptions {
  data: () => DataAccess;
  notifications: Pick<NotificationsService, 'store' | 'announce'>;
  users: Pick<UsersApi, 'accountIdsAfter'>;
  log: Pick<Logger, 'warn'>;
  clock: () => Date;
  intervalMs: number;
}

/**
 * Broadcasts to everyone, run by every node. A pass takes the oldest unfinished broadcast (skip
 * locked: one node per broadcast at a time) and notifies the next batch of accounts created by
 * its time, in id order, recording how far it got in the same transaction: a node stopped midway
 * leaves the rest to the next pass of any node, and no account is notified twice.
 */
export class BroadcastJob {
  private readonly repeating: RepeatingPass;

  constructor(private readonly options: BroadcastJobOptions) {
    this.repeating = new RepeatingPass(() => this.runOnce(), {
      intervalMs: options.intervalMs,
      log: options.log,
      name: 'a broadcast pass',
    });
  }

  start(): void {
    this.repeating.start();
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }

  /**
   * Notifies until no broadcast is left, with the timer's passes (tests): the pass a broadcast woke
   * may hold a batch that this one's claim skips, so it waits for any pass under way, before and after.
   */
  async runUntilDone(): Promise<void> {
    await this.repeating.idle();
    await this.runOnce();
    await this.repeating.idle();
  }

  /** A broadcast was accepted on this node: the next pass runs now. */
  wake(): void {
    this.repeating.wake();
  }

  /** Notifies batches until no broadcast is left unfinished or free (tests, and the timer). */
  async runOnce(): Promise<void> {
    // A stopping node finishes the batch under way; the rest is any node's next pass.
    for (;;) {
      if (this.repeating.stopping) return;
      const written = await this.nextBatch();
      if (written === undefined) return;
      await this.options.notifications.announce(written, this.options.log);
    }
  }

  /** One batch of one broadcast; undefined when there was none to take. */
  private nextBatch(): Promise<NotificationRow[] | undefined> {
    const { users, notifications, clock } = this.options;
    return transaction(this.options.data(), async (tx) => {
      const broadcast = await claimBroadcast(tx);
      if (!broadcast) return undefined;
      const ids = await users.accountIdsAfter(tx, broadcast.last_user_id, broadcast.created_at, BATCH);
      const rows = await notifications.store(
        tx,
        ids.map((userId) => ({
          userId,
          code: broadcast.code,
          subject: broadcast.subject,
          content: broadcast.content,
        })),
        clock(),
      );
      await advanceBroadcast(
        tx,
        broadcast.id,
        ids.at(-1) ?? broadcast.last_user_id,
        ids.length < BATCH,
        clock(),
      );
      return rows;
    });
  }
}
