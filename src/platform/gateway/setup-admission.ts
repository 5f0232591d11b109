import type { SetupGate } from '../../../protocol/operation.js';
import { AppError, DEPENDENCY_RETRY_AFTER_SECONDS, ErrorCode } from '../errors.js';
import { Fifo } from '../fifo.js';

interface Gate {
  readonly concurrency: number;
  running: number;
  readonly waiting: Fifo<() => void>;
}

/**
 * Runs the frames every client sends as it connects (operations declared `setup`) a bounded number
 * at a time on this node, the rest in arrival order. When a node dies, its clients reconnect to the
 * others within a second or so. Their joins and subscriptions (gate `database`), several statements
 * each, would otherwise take every pooled database connection for seconds, and the steady requests
 * of clients already set up would wait past the pool's acquire timeout: WS_SETUP_CONCURRENCY of
 * them run at once. Their auth frames (gate `auth`) take no pooled connection, only a few KV round
 * trips each, so they have a gate of their own (WS_AUTH_CONCURRENCY, wider): behind the joins they
 * would wait for the database for nothing, and a node could not authenticate sockets faster than
 * a few per round trip. Once `maxWaiting` frames wait in all, one more is refused at once with
 * SERVICE_UNAVAILABLE: its client retries later (AtriumClient reconnects with backoff), and the
 * queues' memory stays bounded.
 */
export class SetupAdmission {
  private readonly gates: Record<SetupGate, Gate>;

  constructor(
    concurrency: Record<SetupGate, number>,
    private readonly maxWaiting: number,
  ) {
    const gate = (size: number): Gate => ({ concurrency: size, running: 0, waiting: new Fifo() });
    this.gates = { auth: gate(concurrency.auth), database: gate(concurrency.database) };
  }

  async run<T>(name: SetupGate, work: () => T | Promise<T>): Promise<T> {
    const gate = this.gates[name];
    if (gate.running < gate.concurrency) gate.running++;
    else if (this.gates.auth.waiting.length + this.gates.database.waiting.length < this.maxWaiting) {
      await new Promise<void>((start) => gate.waiting.push(start));
    } else {
      throw new AppError(
        ErrorCode.SERVICE_UNAVAILABLE,
        'Too many connections are being set up on this node right now; retry shortly.',
        { retryAfterSeconds: DEPENDENCY_RETRY_AFTER_SECONDS },
      );
    }
    try {
      return await work();
    } finally {
      // A finished frame hands its place to the next one waiting at its gate, or gives it back.
      const next = gate.waiting.shift();
      if (next) next();
      else gate.running--;
    }
  }
}
