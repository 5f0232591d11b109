import { setImmediate } from 'node:timers/promises';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import type { Logger } from '../../platform/log.js';
import {
  agedHorizon,
  armPruning,
  checkCaps,
  claimDueWorld,
  type HistoryState,
  pruneWindow,
  raiseHorizon,
  scheduleNextPass,
} from './history-retention.repository.js';

/** Statements one world's pass runs before it commits and lets writers (and other worlds) have a turn. */
const STATEMENTS_PER_TURN = 8;

export interface RetentionSettings {
  /** WORLD_HISTORY_RETENTION_SECONDS: revisions superseded longer ago than this are pruned. */
  retentionSeconds: number;
  /** WORLD_HISTORY_MAX_REVISIONS: each chunk keeps at most this many (one more between passes). */
  maxRevisions: number;
}

/**
 * Revision retention (docs/worlds.md, "Retention"): every node runs a pass every interval over the
 * worlds whose history is due, one world at a time. A world is claimed with `for update skip
 * locked` on its row, so a pass never waits for a writer or for another node's pass, and each
 * turn is a short transaction of a few bounded statements: a world with a long backlog takes
 * several turns, and writers to it wait at most one turn.
 */
export class HistoryRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopping = false;

  constructor(
    private readonly deps: {
      data: () => DataAccess;
      log: Logger;
      settings: RetentionSettings;
      intervalSeconds: number;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.runDue(new Date()).catch((err) => this.deps.log.error({ err }, 'pruning world history failed'));
    }, this.deps.intervalSeconds * 1000);
    this.timer.unref();
  }

  /** Stops the timer, and a run under way after its current turn: what is left waits for the next start. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping = true;
    await this.running?.catch(() => {});
  }

  /**
   * Passes over every world due at `now` until none is left; answers the turns taken. A run still
   * going when the next one is asked for is the answer to both.
   */
  runDue(now: Date): Promise<number> {
    this.running ??= (async () => {
      try {
        let turns = 0;
        while (!this.stopping && (await this.turn(now))) turns++;
        return turns;
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** One turn on the world due longest, if any; false when no world is due. */
  private turn(now: Date): Promise<boolean> {
    return transaction(this.deps.data(), async (tx) => {
      const state = await claimDueWorld(tx, now);
      if (!state) return false;
      await armPruning(tx);
      const advanced = await this.advance(tx, state, now);
      await scheduleNextPass(
        tx,
        state.worldId,
        advanced.finished
          ? { ...advanced, retentionSeconds: this.deps.settings.retentionSeconds }
          : { finished: false, now },
      );
      return true;
    });
  }

  /**
   * Moves the world's pruning along, first finishing what the current horizon allows, then
   * raising the horizon for the per-chunk cap (chunks written since the last check) and for age.
   * Answers whether everything due is done (with when the first revision above the horizon was
   * created), or the turn's statements ran out first.
   */
  private async advance(
    data: DataAccess,
    state: HistoryState,
    now: Date,
  ): Promise<{ finished: true; firstCreatedAt: string | null } | { finished: false }> {
    const { retentionSeconds, maxRevisions } = this.deps.settings;
    const cutoff = new Date(now.getTime() - retentionSeconds * 1000);
    let { horizon, prunedThrough, checkedThrough } = state;
    const raise = async (to: number) => {
      await raiseHorizon(data, state.worldId, to);
      horizon = to;
    };
    for (let statements = 0; statements < STATEMENTS_PER_TURN; statements++) {
      // On the embedded database each statement runs in this process: let requests in between.
      await setImmediate();
      if (prunedThrough < horizon) {
        prunedThrough = await pruneWindow(data, state.worldId, prunedThrough, horizon);
        continue;
      }
      if (checkedThrough < state.contentRevision) {
        const checked = await checkCaps(
          data,
          { worldId: state.worldId, after: checkedThrough, contentRevision: state.contentRevision },
          maxRevisions,
        );
        checkedThrough = checked.through;
        if (checked.capHorizon > horizon) await raise(checked.capHorizon);
        continue;
      }
      const { aged, firstCreatedAt } = await agedHorizon(data, state.worldId, horizon, cutoff);
      if (aged <= horizon) return { finished: true, firstCreatedAt };
      await raise(aged);
    }
    return { finished: false };
  }
}
