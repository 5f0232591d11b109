import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Node } from './cluster.js';
import type { Ledger } from './ledger.js';

/**
 * The soak's faults: a random node killed with -9 every 30-60 s and started again at once, Redis
 * restarted once and PostgreSQL once. Each fault is recorded as a window from its start until the
 * part is back.
 */

/** How long Redis and PostgreSQL stay down when restarted. */
export const DEPENDENCY_DOWN_MS = 5_000;

export interface Fault {
  what: string;
  /** Milliseconds since the soak started. */
  from: number;
  to: number;
}

type Kind = 'kill' | 'redis' | 'postgres';

/** A pause of 30-60 s. */
const between = () => 30_000 + Math.random() * 30_000;

export class Chaos {
  readonly faults: Fault[] = [];
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly cluster: Cluster,
    private readonly ledger: Ledger,
    private readonly log: (line: string) => void,
    /** Sockets connected to a node now. */
    private readonly socketsOn: (node: Node) => number,
  ) {}

  /**
   * Starts the faults, for `loadMs` from now: a kill 30-60 s after the previous fault is over (a
   * node restart takes tens of seconds on a busy machine, so a fixed timetable would kill nodes
   * that have barely started), Redis once a third of the time has passed and PostgreSQL once two
   * thirds have, each as soon as the fault under way is over.
   */
  start(loadMs: number): void {
    const startedAt = this.ledger.now();
    const pending: { at: number; kind: Kind }[] = [
      { at: startedAt + loadMs / 3, kind: 'redis' },
      { at: startedAt + (2 * loadMs) / 3, kind: 'postgres' },
    ];
    const end = startedAt + loadMs - 10_000;
    this.running = (async () => {
      let nextKill = startedAt + between();
      while (!this.stopped) {
        const due = pending[0] && pending[0].at <= nextKill ? pending[0] : undefined;
        const at = due ? due.at : nextKill;
        if (at > end) return;
        const wait = at - this.ledger.now();
        if (wait > 0) await sleep(wait);
        if (this.stopped) return;
        if (due) pending.shift();
        await this.play(due ? due.kind : 'kill');
        if (!due) nextKill = this.ledger.now() + between();
      }
    })();
  }

  /** Resolves once the fault under way (if any) is over; no new one starts. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async play(kind: Kind): Promise<void> {
    const from = this.ledger.now();
    if (kind === 'kill') {
      const node = this.cluster.nodes[Math.floor(Math.random() * this.cluster.nodes.length)] as Node;
      const sockets = this.socketsOn(node);
      this.log(`chaos: kill -9 node ${node.index} (${sockets} sockets)`);
      await this.cluster.killNode(node);
      await this.cluster.startNode(node);
      this.faults.push({
        what: `node ${node.index} killed (${sockets} sockets) and started again`,
        from,
        to: this.ledger.now(),
      });
      return;
    }
    const server = kind === 'redis' ? this.cluster.redis : this.cluster.postgres;
    this.log(`chaos: ${kind} down for ${DEPENDENCY_DOWN_MS / 1000} s`);
    await server.stop();
    await sleep(DEPENDENCY_DOWN_MS);
    await server.start();
    this.faults.push({
      what: `${kind === 'redis' ? 'Redis' : 'PostgreSQL'} restarted`,
      from,
      to: this.ledger.now(),
    });
  }
}
