import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Node } from './cluster.js';
import type { Ledger } from './ledger.js';

/**
 * The soak's faults, on a schedule fixed at the start: a random node killed with -9 every 30-60 s
 * and started again at once, Redis restarted at a third of the load time and PostgreSQL at two
 * thirds. Each fault is recorded as a window from its start until the part is back.
 */

/** How long Redis and PostgreSQL stay down when restarted. */
export const DEPENDENCY_DOWN_MS = 5_000;

export interface Fault {
  what: string;
  /** Milliseconds since the soak started. */
  from: number;
  to: number;
}

type Step = { at: number; kind: 'kill' } | { at: number; kind: 'redis' | 'postgres' };

function schedule(loadMs: number): Step[] {
  const steps: Step[] = [
    { at: loadMs / 3, kind: 'redis' },
    { at: (2 * loadMs) / 3, kind: 'postgres' },
  ];
  for (let at = 30_000 + Math.random() * 30_000; at < loadMs - 10_000; at += 30_000 + Math.random() * 30_000)
    steps.push({ at, kind: 'kill' });
  return steps.sort((a, b) => a.at - b.at);
}

export class Chaos {
  readonly faults: Fault[] = [];
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly cluster: Cluster,
    private readonly ledger: Ledger,
    private readonly log: (line: string) => void,
  ) {}

  /** Starts the schedule, `loadMs` long, measured from now. */
  start(loadMs: number): void {
    const startedAt = this.ledger.now();
    this.running = (async () => {
      for (const step of schedule(loadMs)) {
        const wait = startedAt + step.at - this.ledger.now();
        if (wait > 0) await sleep(wait);
        if (this.stopped) return;
        await this.play(step.kind);
      }
    })();
  }

  /** Resolves once the fault under way (if any) is over; no new one starts. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async play(kind: Step['kind']): Promise<void> {
    const from = this.ledger.now();
    if (kind === 'kill') {
      const node = this.cluster.nodes[Math.floor(Math.random() * this.cluster.nodes.length)] as Node;
      this.log(`chaos: kill -9 node ${node.index}`);
      await this.cluster.killNode(node);
      await this.cluster.startNode(node);
      this.faults.push({ what: `node ${node.index} killed and started again`, from, to: this.ledger.now() });
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
