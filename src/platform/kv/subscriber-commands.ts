export type SubscriberCommand = 'subscribe' | 'unsubscribe';

interface Run {
  command: SubscriberCommand;
  channels: string[];
  sent: Promise<void>;
  send(result: Promise<unknown>): void;
}

/**
 * The subscriptions and unsubscriptions of one turn of the event loop, sent together at the next
 * check phase: consecutive ones of a kind as one command of up to MAX_CHANNELS_PER_COMMAND
 * channels, in the order they were asked for, so a channel left and joined again stays joined. The
 * subscriber connection writes each command to its socket on its own (it does not auto-pipeline):
 * 15,000 sockets closing at once cost 15,000 UNSUBSCRIBE writes, 0.65 s of a blocked loop, and as
 * many connecting cost 48 µs each of SUBSCRIBE writes (docs/performance.md, "A mass disconnect").
 */
export class SubscriberCommands {
  private runs: Run[] = [];

  /** `send` runs the command for channels' full names, settling once Redis confirmed them all. */
  constructor(private readonly send: (command: SubscriberCommand, channels: string[]) => Promise<unknown>) {}

  /** Settles when Redis confirmed the command holding `channel`, or rejects as that command did. */
  add(command: SubscriberCommand, channel: string): Promise<void> {
    if (this.runs.length === 0) setImmediate(() => this.flush());
    let run = this.runs.at(-1);
    if (!run || run.command !== command || run.channels.length >= MAX_CHANNELS_PER_COMMAND) {
      let send!: Run['send'];
      const sent = new Promise<unknown>((resolve) => {
        send = resolve;
      }).then(() => undefined);
      run = { command, channels: [], sent, send };
      this.runs.push(run);
    }
    run.channels.push(channel);
    return run.sent;
  }

  /** Sends what waits, in order. */
  private flush(): void {
    for (const run of this.runs.splice(0)) run.send(this.send(run.command, run.channels));
  }
}

/** Bounds one command's size (its replies come one per channel) while still sending few. */
const MAX_CHANNELS_PER_COMMAND = 1_000;
