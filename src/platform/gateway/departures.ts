import { Fifo } from '../fifo.js';

/**
 * Runs what a closed socket leaves to do beyond this node (uncounting it from its user's socket
 * quota, ending the user's presence) at most `concurrency` at a time, the rest in the order they
 * closed. When a client machine or a load balancer drops thousands of sockets at once, uWS hands
 * their closes over within a few turns of the event loop: started together, their Redis commands
 * (several each, some waiting on the one before) and their replies were handled in a few turns
 * too, blocking the loop for over a second with 15,000 sockets (docs/performance.md, "A mass
 * disconnect"), and every other client's requests and heartbeats waited as long. A bounded
 * number in flight spreads that work over many short turns. Waiting costs one closure per
 * socket, never more than the sockets this node held.
 */
export class Departures {
  private running = 0;
  private readonly waiting = new Fifo<() => Promise<unknown>>();
  private unbounded = false;

  constructor(private readonly concurrency: number) {}

  /** Runs `departure` now, or once fewer than `concurrency` run; it must handle its own failures. */
  run(departure: () => Promise<unknown>): void {
    if (this.unbounded || this.running < this.concurrency) this.start(departure);
    else this.waiting.push(departure);
  }

  /**
   * From now on every departure starts at once, those waiting too: the node is shutting down, and
   * its steps after the sockets closed wait for the work these start (presence's offline events).
   */
  drain(): void {
    this.unbounded = true;
    for (const departure of this.waiting.takeAll()) this.start(departure);
  }

  private start(departure: () => Promise<unknown>): void {
    this.running++;
    const next = () => {
      this.running--;
      const following = this.waiting.shift();
      if (following) this.start(following);
    };
    departure().then(next, next);
  }
}
