import { randomUUID } from 'node:crypto';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { isId } from '../../platform/ids.js';
import type { Kv } from '../../platform/kv/kv.js';
import type { Logger } from '../../platform/log.js';
import { RepeatingPass } from '../../platform/repeating-pass.js';
import type { PresenceApi } from '../presence/index.js';
import {
  lockParty,
  markPresence,
  membershipsAfter,
  NO_USER_ID,
  type OfflineMember,
  offlineMembersAfter,
  pruneInvites,
} from './parties.repository.js';
import { depart } from './party-departures.js';
import type { PartyEvents } from './party-events.js';

/** Rows one statement (and ids one presence read) of a pass takes. */
const PAGE = 1000;
/** Expired invitations one prune deletes at most. */
const PRUNE = 1000;
/** How often a node prunes expired invitations: the rules ignore them meanwhile. */
const PRUNE_INTERVAL_MS = 60_000;

/** Held by the node that sweeps for the whole service, for one interval (`runOnce`). */
export const SWEEP_TURN_KEY = 'parties:offline-sweep:turn';
/** Users whose presence a node ended since the last pass: the next pass looks at them first. */
export const WENT_OFFLINE_KEY = 'parties:offline-sweep:went-offline';
/** The last user id of the walk's page in the previous pass. */
const WALK_CURSOR_KEY = 'parties:offline-sweep:walked';

export interface OfflineSweepOptions {
  data: () => DataAccess;
  kv: Pick<Kv, 'set' | 'get' | 'del' | 'sadd' | 'srem' | 'smembers'>;
  presence: Pick<PresenceApi, 'onlineAmong'>;
  events: PartyEvents;
  log: Logger;
  /** PARTY_OFFLINE_GRACE_SECONDS. */
  graceSeconds: number;
  clock: () => Date;
  /** Memberships the walk reads per pass (PAGE; fewer in tests, to show what a pass reads). */
  walkPage?: number;
}

/** How often a sweep runs somewhere in the service: every second, sooner for a short grace. */
export const sweepIntervalMs = (graceSeconds: number) =>
  Math.min(1000, Math.max(100, (graceSeconds * 1000) / 4));

/**
 * Removes party members who stayed offline (the presence store, whatever their
 * presence_visibility) for the grace, as if they left. Its cost follows what may be due, not the
 * number of members: with 100k members, reading every membership and its presence every second
 * on every node would be 100 statements and 100 KV reads per node and second for nothing.
 *
 * - One node sweeps per interval: each node's timer tries to take a KV key that lapses after one
 *   interval (`runOnce`), and a node that does not get it reads nothing. A dead holder's turn
 *   lapses, so a live node sweeps the next interval: a dead node's users still go.
 * - A pass looks at three sets of members, each read by an index: (1) the users presence ended
 *   on any node since the last pass (PresenceApi.onWentOffline puts them in a KV set): those still
 *   offline get `offline_since`, the first sighting of their absence (never before their join);
 *   (2) every member whose `offline_since` is set, their presence read once per pass: one back
 *   online loses it (the clock stops), one offline since the grace's start is removed; new
 *   members join with it set (the clock runs from the join until a pass sees them online); (3)
 *   one page of a walk over all memberships, which goes on where the previous pass stopped: it
 *   finds, within members / PAGE passes, an absence that presence could not tell (a REST
 *   heartbeat whose node died before its TTL lapsed, a key the KV store lost, a node that died
 *   between ending presence and telling the set).
 * - A removal is a transaction holding the party's lock whose delete holds only while that
 *   `offline_since` still stands: when two passes overlap (one outlasting its turn), one removes
 *   the member and the other finds nothing, so the events go out once; a member seen online
 *   again meanwhile stays.
 * - Expired invitations are deleted once a minute.
 */
export class OfflineSweep {
  private readonly repeating: RepeatingPass;
  private readonly intervalMs: number;
  /** This sweep's value in the turn key. */
  private readonly holder = randomUUID();
  private prunedAt = 0;

  constructor(private readonly options: OfflineSweepOptions) {
    this.intervalMs = sweepIntervalMs(options.graceSeconds);
    this.repeating = new RepeatingPass(() => this.runOnce(), {
      intervalMs: this.intervalMs,
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

  /** Presence ended the user's presence: the next pass, on whichever node, looks at them. */
  wentOffline(userId: string): Promise<number> {
    return this.options.kv.sadd(WENT_OFFLINE_KEY, userId);
  }

  /** A timer's pass: sweeps when this node takes the turn; else one KV command and no statement. */
  async runOnce(): Promise<void> {
    const turn = await this.options.kv.set(SWEEP_TURN_KEY, this.holder, {
      ttlMs: this.intervalMs,
      onlyIfAbsent: true,
    });
    if (turn) await this.sweep();
  }

  /** One pass, whether or not another runs meanwhile (the turn's holder; tests). */
  async sweep(): Promise<void> {
    const now = this.options.clock();
    await this.markWentOffline(now);
    // A walk that began at the start and found no membership: nobody is in a party, so none has
    // `offline_since` to review (one who joins meanwhile is not due before the next pass).
    if ((await this.walk(now)) === 'none') return this.prune(now);
    await this.reviewOffline(now);
    await this.prune(now);
  }

  /** Expired invitations, once a minute. */
  private async prune(now: Date): Promise<void> {
    if (now.getTime() - this.prunedAt >= PRUNE_INTERVAL_MS) {
      await pruneInvites(this.options.data(), now, PRUNE);
      this.prunedAt = now.getTime();
    }
  }

  /** (1) The users presence ended since the last pass: those still offline get `offline_since`. */
  private async markWentOffline(now: Date): Promise<void> {
    const { kv, presence, data } = this.options;
    const userIds = await kv.smembers(WENT_OFFLINE_KEY);
    for (let start = 0; start < userIds.length && !this.repeating.stopping; start += PAGE) {
      const batch = userIds.slice(start, start + PAGE);
      // Out of the set before their presence is read: one who comes back and leaves again
      // meanwhile is added anew, for the next pass.
      await kv.srem(WENT_OFFLINE_KEY, ...batch);
      const online = await presence.onlineAmong(batch);
      // Users in no party match no row: one statement by the one-party index whatever they are.
      const offline = batch.filter((id) => !online.has(id));
      if (offline.length > 0) await markPresence(data(), offline, [], now);
    }
  }

  /**
   * (3) One page of the walk over every membership, from where the last pass left it; 'none' when
   * it began at the start and found none (with no cursor to remove, no KV command after the read).
   */
  private async walk(now: Date): Promise<'none' | undefined> {
    const { kv, presence, data } = this.options;
    const size = this.options.walkPage ?? PAGE;
    const cursor = await kv.get(WALK_CURSOR_KEY);
    const fromStart = !(cursor && isId(cursor));
    const page = await membershipsAfter(data(), fromStart ? NO_USER_ID : cursor, size);
    if (page.length === 0 && fromStart) {
      if (cursor !== null) await kv.del(WALK_CURSOR_KEY);
      return 'none';
    }
    const online = await presence.onlineAmong(page.map((row) => row.user_id));
    const wentOffline = page.filter((row) => !row.offline && !online.has(row.user_id));
    const cameBack = page.filter((row) => row.offline && online.has(row.user_id));
    if (wentOffline.length + cameBack.length > 0) {
      const ids = (rows: typeof page) => rows.map((row) => row.user_id);
      await markPresence(data(), ids(wentOffline), ids(cameBack), now);
    }
    const last = page.at(-1);
    if (page.length < size || last === undefined) await kv.del(WALK_CURSOR_KEY);
    else await kv.set(WALK_CURSOR_KEY, last.user_id);
    return undefined;
  }

  /**
   * (2) Every member whose `offline_since` is set, the longest absent first: one back online
   * loses it, one offline since the grace's start or before is removed.
   */
  private async reviewOffline(now: Date): Promise<void> {
    const { data, presence } = this.options;
    const cutoff = new Date(now.getTime() - this.options.graceSeconds * 1000);
    let after = { offline_since: new Date(0), user_id: NO_USER_ID };
    while (!this.repeating.stopping) {
      const page = await offlineMembersAfter(data(), after, PAGE);
      const online = await presence.onlineAmong(page.map((row) => row.user_id));
      const back = page.filter((row) => online.has(row.user_id)).map((row) => row.user_id);
      if (back.length > 0) await markPresence(data(), [], back, now);
      for (const member of page) {
        if (member.offline_since > cutoff || online.has(member.user_id)) continue;
        await this.remove(member, cutoff);
      }
      const last = page.at(-1);
      if (page.length < PAGE || last === undefined) return;
      after = last;
    }
  }

  private async remove(member: OfflineMember, cutoff: Date): Promise<void> {
    const { data, events, log } = this.options;
    const departure = await transaction(data(), async (tx) => {
      const party = await lockParty(tx, member.party_id);
      return party ? depart(tx, party, member.user_id, cutoff) : undefined;
    });
    if (departure) await events.departed(log, departure);
  }
}
