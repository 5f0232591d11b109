import { setImmediate as afterIo } from 'node:timers';

/** Whether a queued change adds a channel to the subscriber connection or removes it. */
export type SubscriptionChange = 'subscribe' | 'unsubscribe';

/** Sends one SUBSCRIBE or UNSUBSCRIBE (or their sharded forms) for these channels; settles on Redis' answer. */
export type SendSubscriptionChange = (
  change: SubscriptionChange,
  channels: readonly string[],
) => Promise<unknown>;

/** Channels in one command at most, so one command stays a few kilobytes. */
const MAX_CHANNELS_PER_COMMAND = 500;

interface Queued {
  change: SubscriptionChange;
  channel: string;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * The subscriber connection's changes, gathered until the event loop's I/O callbacks of this turn
 * have run (`setImmediate`) and sent as one command per run of the same change, in the order they
 * were asked for. A socket joins its user's topic on connect and leaves it on close: one command
 * each was a socket write each, which on a connect storm cost the gateway more than any other
 * single call (docs/performance.md). A tick would not do: every socket's close is a callback of its
 * own, and Node runs the ticks after each. The order is kept because Redis runs one connection's
 * commands in order: a subscription asked after an unsubscription of the same channel must still
 * win. (`node:timers`' own setImmediate: a test's fake timers replace only the global one.)
 */
export class SubscriptionWrites {
  private queued: Queued[] = [];

  constructor(private readonly send: SendSubscriptionChange) {}

  /** Settles when the command carrying the change is answered, and rejects with its failure. */
  change(change: SubscriptionChange, channel: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.queued.length === 0) afterIo(() => this.flush());
      this.queued.push({ change, channel, resolve, reject });
    });
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = [];
    let start = 0;
    while (start < queued.length) {
      const change = (queued[start] as Queued).change;
      let end = start + 1;
      while (end < queued.length && end - start < MAX_CHANNELS_PER_COMMAND && queued[end]?.change === change)
        end++;
      const run = queued.slice(start, end);
      let sent: Promise<unknown>;
      try {
        sent = this.send(
          change,
          run.map((entry) => entry.channel),
        );
      } catch (error) {
        sent = Promise.reject(error);
      }
      sent.then(
        () => {
          for (const entry of run) entry.resolve();
        },
        (error: unknown) => {
          for (const entry of run) entry.reject(error);
        },
      );
      start = end;
    }
  }
}
