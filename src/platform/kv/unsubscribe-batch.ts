/**
 * The channels a subscriber connection leaves, sent together: everything dropped within one turn
 * of the event loop goes out at the next check phase, as one UNSUBSCRIBE per
 * MAX_CHANNELS_PER_COMMAND channels. The subscriber connection writes each command to its socket
 * on its own, so a mass disconnect leaving 15,000 users' topics cost 15,000 socket writes, 0.65 s
 * of a blocked loop (docs/performance.md, "A mass disconnect"). A subscription must never be
 * overtaken by an older unsubscription of its channel: whoever subscribes calls `flush` first.
 */
export class UnsubscribeBatch {
  private pending:
    | { channels: string[]; sent: Promise<void>; send(result: Promise<unknown>): void }
    | undefined;

  /** `send` unsubscribes from the channels it is given (full names), settling once Redis confirmed. */
  constructor(private readonly send: (channels: string[]) => Promise<unknown>) {}

  /** Settles when the batch holding `channel` was confirmed, or rejects as its command did. */
  add(channel: string): Promise<void> {
    if (!this.pending) {
      let send!: (result: Promise<unknown>) => void;
      const sent = new Promise<unknown>((resolve) => {
        send = resolve;
      }).then(() => undefined);
      this.pending = { channels: [], sent, send };
      setImmediate(() => this.flush());
    }
    this.pending.channels.push(channel);
    return this.pending.sent;
  }

  /** Sends what is waiting now. */
  flush(): void {
    const batch = this.pending;
    if (!batch) return;
    this.pending = undefined;
    const commands: Promise<unknown>[] = [];
    for (let start = 0; start < batch.channels.length; start += MAX_CHANNELS_PER_COMMAND)
      commands.push(this.send(batch.channels.slice(start, start + MAX_CHANNELS_PER_COMMAND)));
    batch.send(Promise.all(commands));
  }
}

/** Bounds one command's size (its replies come one per channel) while still sending few. */
const MAX_CHANNELS_PER_COMMAND = 1_000;
