import { type DataAccess, transaction } from '../../platform/data-access.js';
import { lockNamed, tryLockNamed } from '../../platform/db.js';
import type { Logger } from '../../platform/log.js';
import { foldVisitors, foldVisits, pruneVisitHours } from './discovery.repository.js';
import { latestSnapshot, takeSnapshot } from './discovery-search.repository.js';

/** Visits folded per statement: a fold of a long backlog commits in bounded steps. */
const FOLD_BATCH = 5_000;
/** Hourly buckets are kept for the popular window (168 h) and a day more. */
const BUCKETS_KEPT_MS = (168 + 24) * 3600_000;
/** Snapshots are kept this long, so a client paging through one has time to finish. */
const SNAPSHOT_KEPT_MS = 10 * 60_000;

export interface DiscoveryJobSettings {
  /** DISCOVERY_FOLD_INTERVAL_SECONDS: how often visits reach the counters (what a kill -9 may leave for the next fold). */
  foldIntervalSeconds: number;
  /** DISCOVERY_RANK_INTERVAL_SECONDS: the most a popular or trending snapshot is behind. */
  rankIntervalSeconds: number;
}

/**
 * The two periodic passes of discovery, run on every node (docs/discovery.md): the fold moves the
 * visits joins appended into the counters and hourly buckets, each visit once (rows are marked in
 * the statement that counts them, and nodes take turns on an advisory lock); the ranking takes a
 * snapshot of every public world's scores when the newest one is older than the interval.
 */
export class DiscoveryJobs {
  private timers: NodeJS.Timeout[] = [];
  private running = new Set<Promise<unknown>>();

  constructor(
    private readonly deps: {
      data: () => DataAccess;
      log: Logger;
      now: () => Date;
      settings: DiscoveryJobSettings;
    },
  ) {}

  start(): void {
    const every = (seconds: number, pass: () => Promise<unknown>, what: string) => {
      const timer = setInterval(() => {
        const run = pass().catch((err) => this.deps.log.error({ err }, `${what} failed`));
        this.running.add(run);
        void run.finally(() => this.running.delete(run));
      }, seconds * 1000);
      timer.unref();
      this.timers.push(timer);
    };
    every(this.deps.settings.foldIntervalSeconds, () => this.fold(), 'folding world visits');
    every(this.deps.settings.rankIntervalSeconds, () => this.rank(), 'ranking worlds');
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    await Promise.allSettled([...this.running]);
  }

  /** Folds every unfolded visit and first visit; answers how many visits it folded (0 when another node's fold held the turn). */
  async fold(): Promise<number> {
    let folded = 0;
    for (;;) {
      const step = await transaction(this.deps.data(), async (tx) => {
        // Folds take turns (a node that finds the lock taken skips its turn), so two never lock
        // counters in different orders.
        if (!(await tryLockNamed(tx, 'discovery:fold'))) return undefined;
        const visits = await foldVisits(tx, FOLD_BATCH);
        const visitors = await foldVisitors(tx, FOLD_BATCH);
        await pruneVisitHours(tx, new Date(this.deps.now().getTime() - BUCKETS_KEPT_MS));
        return { visits, more: visits === FOLD_BATCH || visitors === FOLD_BATCH };
      });
      if (!step) return folded;
      folded += step.visits;
      if (!step.more) return folded;
    }
  }

  /**
   * Takes a snapshot unless the newest is younger than the interval (another node took it);
   * `force` takes one anyway. Nodes take turns on a lock, so one snapshot per interval is made.
   */
  async rank(force = false): Promise<void> {
    const now = this.deps.now();
    await transaction(this.deps.data(), async (tx) => {
      await lockNamed(tx, 'discovery:rank');
      const latest = await latestSnapshot(tx);
      const age = latest ? now.getTime() - Date.parse(latest) : Number.POSITIVE_INFINITY;
      if (!force && age < this.deps.settings.rankIntervalSeconds * 1000 * 0.9) return;
      await takeSnapshot(tx, now, new Date(now.getTime() - SNAPSHOT_KEPT_MS));
    });
  }
}
