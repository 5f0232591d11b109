import { type DataAccess, transaction } from '../../platform/data-access.js';
import type { Logger } from '../../platform/log.js';
import { RepeatingPass } from '../../platform/repeating-pass.js';
import type { PresenceApi } from '../presence/index.js';
import { dueOffline, lockParty, markPresence, membershipsAfter, pruneInvites } from './parties.repository.js';
import { depart } from './party-departures.js';
import type { PartyEvents } from './party-events.js';

/** Memberships one statement (and one presence read) of a pass looks at. */
const PAGE = 1000;
/** Due members one statement of a pass takes to remove. */
const REMOVALS = 100;
/** Expired invitations one prune deletes at most. */
const PRUNE = 1000;
/** How often a node prunes expired invitations: the rules ignore them meanwhile. */
const PRUNE_INTERVAL_MS = 60_000;

export interface OfflineSweepOptions {
  data: () => DataAccess;
  presence: Pick<PresenceApi, 'onlineAmong'>;
  events: PartyEvents;
  log: Logger;
  /** PARTY_OFFLINE_GRACE_SECONDS. */
  graceSeconds: number;
  clock: () => Date;
}

/**
 * How often a node sweeps: a member goes out at most two intervals after their grace ended (one
 * until a pass sees them offline, one until a pass sees the grace over), so at most 2 s late, and
 * sooner for a short grace.
 */
export const sweepIntervalMs = (graceSeconds: number) =>
  Math.min(1000, Math.max(100, (graceSeconds * 1000) / 4));

/**
 * Removes party members who stayed offline (the presence store, whatever their
 * presence_visibility) for the grace, as if they left. Every node runs it, so the parties of a
 * node that died are swept too. A pass:
 * - walks every membership in pages, reads the page's presence in one KV command, and records
 *   the first time a member was seen offline (never before their join) or clears it for one seen
 *   online again: the clock runs from the later of the join and the going offline, and coming
 *   back stops it;
 * - removes the members offline since the grace's start or before, each in a transaction holding
 *   its party's lock whose delete is conditional on that time: when two nodes sweep the same
 *   member, one removes them and the other finds nothing to do, so the events go out once;
 * - deletes invitations that expired, once a minute.
 */
export class OfflineSweep {
  private readonly repeating: RepeatingPass;
  private prunedAt = 0;

  constructor(private readonly options: OfflineSweepOptions) {
    this.repeating = new RepeatingPass(() => this.runOnce(), {
      intervalMs: sweepIntervalMs(options.graceSeconds),
      log: options.log,
      name: 'a party offline sweep',
    });
  }

  start(): void {
    this.repeating.start();
  }

  stop(): Promise<void> {
    return this.repeating.stop();
  }

  async runOnce(): Promise<void> {
    // With no member at all, nobody is due either: an idle node runs one statement per pass.
    if ((await this.observe()) > 0) await this.removeDue();
    const now = this.options.clock();
    if (now.getTime() - this.prunedAt >= PRUNE_INTERVAL_MS) {
      await pruneInvites(this.options.data(), now, PRUNE);
      this.prunedAt = now.getTime();
    }
  }

  /** Records who went offline and who came back, page by page; answers how many members it saw. */
  private async observe(): Promise<number> {
    const { data, presence, clock } = this.options;
    let after: string | null = null;
    let seen = 0;
    while (!this.repeating.stopping) {
      const page = await membershipsAfter(data(), after, PAGE);
      seen += page.length;
      const online = await presence.onlineAmong(page.map((row) => row.user_id));
      const wentOffline = page.filter((row) => !row.offline && !online.has(row.user_id));
      const cameBack = page.filter((row) => row.offline && online.has(row.user_id));
      if (wentOffline.length + cameBack.length > 0) {
        const ids = (rows: typeof page) => rows.map((row) => row.user_id);
        await markPresence(data(), ids(wentOffline), ids(cameBack), clock());
      }
      const last = page.at(-1);
      if (page.length < PAGE || last === undefined) return seen;
      after = last.user_id;
    }
    return seen;
  }

  /** Removes the members whose grace is over, the longest absent first. */
  private async removeDue(): Promise<void> {
    const { data, presence, clock, events, log, graceSeconds } = this.options;
    while (!this.repeating.stopping) {
      const cutoff = new Date(clock().getTime() - graceSeconds * 1000);
      const due = await dueOffline(data(), cutoff, REMOVALS);
      if (due.length === 0) return;
      // Back online since the last observation: their clock stops now, not at the next pass.
      const online = await presence.onlineAmong(due.map((row) => row.user_id));
      const back = due.filter((row) => online.has(row.user_id)).map((row) => row.user_id);
      if (back.length > 0) await markPresence(data(), [], back, clock());
      for (const member of due) {
        if (online.has(member.user_id)) continue;
        const departure = await transaction(data(), async (tx) => {
          const party = await lockParty(tx, member.party_id);
          return party ? depart(tx, party, member.user_id, cutoff) : undefined;
        });
        if (departure) await events.departed(log, departure);
      }
      if (due.length < REMOVALS) return;
    }
  }
}
