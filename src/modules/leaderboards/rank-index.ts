import type { DataAccess } from '../../platform/data-access.js';
import { type Kv, ORDERED_SET_BATCH } from '../../platform/kv/kv.js';
import type { Logger } from '../../platform/log.js';
import { keyOfMember, memberOf, type RankKey } from './rank-key.js';
import { bumpIndexEpoch, indexEntries, indexEpoch, type StandingsPeriod } from './records.repository.js';

/** Keys around a record: the first one's position and how many records the standings hold. */
export interface Window {
  start: number;
  total: number;
  keys: RankKey[];
}

/** Records a rebuild reads and loads per round trip. */
const REBUILD_BATCH = 1000;
/** How long one node holds a period's rebuild before another may take it over. */
const REBUILD_LEASE_MS = 120_000;

/**
 * The rank index of each standings period: an ordered set of the KV (a Redis sorted set, or the
 * in-process one when embedded) holding every record's rank key, which answers a rank and the
 * records around it in O(log n). PostgreSQL stays the source of truth:
 *
 * - Every committed change is applied after its commit with the record's version, so changes
 *   landing in any order keep the latest (zreplaceVersioned).
 * - The index answers only while its `ready` marker holds the period's epoch in PostgreSQL. A
 *   change it could not take (the KV failed) bumps the epoch, an account deletion's cascade does
 *   too (migration 0033), and a lost KV loses the marker: then reads are answered by SQL alone,
 *   exact and slower, while one node rebuilds the index from the records.
 */
export class RankIndex {
  /** Rebuilds this node runs, by period: one at a time per period. */
  private readonly rebuilding = new Map<string, Promise<void>>();

  constructor(
    private readonly kv: Kv,
    private readonly log: Pick<Logger, 'warn' | 'info'>,
    private readonly data: () => DataAccess,
  ) {}

  /** The KV keys of a period; one hash tag, so Redis Cluster runs their scripts on one slot. */
  private keys(period: StandingsPeriod) {
    const tag = `lb:{${period.ref}:${period.periodStart.getTime()}}`;
    return { set: `${tag}:set`, versions: `${tag}:versions`, ready: `${tag}:ready`, lease: `${tag}:lease` };
  }

  /**
   * Whether the index may answer for the period now. When it may not, a rebuild is started in the
   * background (if no node runs one) and the caller answers from SQL.
   */
  async ready(period: StandingsPeriod): Promise<boolean> {
    const [marker, epoch] = await Promise.all([
      this.marker(period),
      period.epoch ??
        indexEpoch(this.data(), period).catch((error: unknown) => this.unchecked(period, error)),
    ]);
    return epoch !== undefined && this.readyAt(period, marker, epoch);
  }

  /**
   * The period's ready marker: null when there is none, undefined when the KV could not be read
   * (then the index answers nothing and no rebuild is started: the KV is what failed). Read it
   * beside a statement that answers the epoch, and give both to readyAt.
   */
  marker(period: StandingsPeriod): Promise<string | null | undefined> {
    return this.kv.get(this.keys(period).ready).catch((error: unknown) => this.unchecked(period, error));
  }

  private unchecked(period: StandingsPeriod, error: unknown): undefined {
    this.log.warn({ err: error, ref: period.ref }, 'the rank index could not be checked; answering from SQL');
    return undefined;
  }

  /**
   * Whether a marker read for the period holds `epoch`, the period's epoch in PostgreSQL. The
   * order of the two reads does not matter: a marker holds an epoch only once the epoch is that.
   * When it does not, a rebuild is started in the background (if no node runs one).
   */
  readyAt(period: StandingsPeriod, marker: string | null | undefined, epoch: number): boolean {
    if (marker === undefined) return false;
    if (marker === String(epoch)) return true;
    this.rebuildInBackground(period, epoch);
    return false;
  }

  /**
   * Applies a committed change of a user's record (`key` undefined: the record was deleted). When
   * the KV cannot take it, the period's epoch is bumped so the index answers nothing until rebuilt.
   * Answers the period to read it on afterwards (without its epoch when it was bumped).
   */
  async apply(
    period: StandingsPeriod,
    userId: string,
    version: number,
    key: RankKey | undefined,
  ): Promise<StandingsPeriod> {
    const keys = this.keys(period);
    try {
      await this.kv.zreplaceVersioned(keys.set, keys.versions, userId, version, key ? memberOf(key) : null);
      return period;
    } catch (error) {
      this.log.warn({ err: error, ref: period.ref }, 'the rank index missed a change; it will be rebuilt');
      await bumpIndexEpoch(this.data(), period);
      // The epoch read with the standings is stale now: the next check reads it again.
      return { ref: period.ref, periodStart: period.periodStart };
    }
  }

  /** The 0-based position a record with `key` has or would have. */
  position(period: StandingsPeriod, key: RankKey): Promise<number> {
    return this.kv.zcountBefore(this.keys(period).set, memberOf(key));
  }

  /**
   * `count` keys around the user's record, `before` of them ahead of it where the standings have
   * them (the window shifted to stay inside), with the first one's position and the records'
   * count: one step of the KV, so the three agree. The record is the one the index holds for the
   * user (the member stored beside its version); without one, the window is the first `count` keys.
   */
  async windowOf(period: StandingsPeriod, userId: string, before: number, count: number): Promise<Window> {
    const { set, versions } = this.keys(period);
    const { start, size, members } = await this.kv.zwindowOfField(set, versions, userId, before, count);
    return { start, total: size, keys: keysOf(members) };
  }

  /** The first `count` keys after `key` (from the top without one). */
  async keysAfter(period: StandingsPeriod, key: RankKey | undefined, count: number): Promise<RankKey[]> {
    const set = this.keys(period).set;
    return keysOf(
      key ? await this.kv.zrangeAfter(set, memberOf(key), count) : await this.kv.zrange(set, 0, count - 1),
    );
  }

  /** Drops the index of periods that are gone (a deleted board, a pruned period). */
  async drop(periods: readonly StandingsPeriod[]): Promise<void> {
    const keys = periods.flatMap((period) => Object.values(this.keys(period)));
    if (keys.length > 0) await this.kv.del(...keys);
  }

  /** Rebuilds the period's index now, unless this node already does (tests, and `ready`). */
  rebuild(period: StandingsPeriod, epoch: number): Promise<void> {
    const id = `${period.ref}:${period.periodStart.getTime()}`;
    let running = this.rebuilding.get(id);
    if (!running) {
      running = this.load(period, epoch).finally(() => this.rebuilding.delete(id));
      this.rebuilding.set(id, running);
    }
    return running;
  }

  private rebuildInBackground(period: StandingsPeriod, epoch: number): void {
    this.rebuild(period, epoch).catch((error: unknown) =>
      this.log.warn({ err: error, ref: period.ref }, 'a rank index rebuild failed; reads stay on SQL'),
    );
  }

  /**
   * Loads every record of the period into a fresh index, then marks it ready at `epoch`. Writes
   * landing meanwhile go in with their versions, so the load never puts back an older key; a
   * change the index missed meanwhile bumped the epoch, so the marker it sets is already stale.
   */
  private async load(period: StandingsPeriod, epoch: number): Promise<void> {
    const keys = this.keys(period);
    const leased = await this.kv.set(keys.lease, String(epoch), {
      ttlMs: REBUILD_LEASE_MS,
      onlyIfAbsent: true,
    });
    if (!leased) return;
    try {
      await this.kv.del(keys.ready, keys.set, keys.versions);
      const started = Date.now();
      let loaded = 0;
      for (let after: string | null = null; ; ) {
        const entries = await indexEntries(this.data(), period, after, REBUILD_BATCH);
        if (entries.length === 0) break;
        const members = entries.map(({ key, version }) => ({
          field: key.userId,
          version,
          member: memberOf(key),
        }));
        // Short KV calls, a few in flight: a long one would hold Redis for its other clients.
        const calls: Promise<boolean[]>[] = [];
        for (let from = 0; from < members.length; from += ORDERED_SET_BATCH)
          calls.push(
            this.kv.zreplaceVersionedMany(
              keys.set,
              keys.versions,
              members.slice(from, from + ORDERED_SET_BATCH),
            ),
          );
        await Promise.all(calls);
        loaded += entries.length;
        after = entries[entries.length - 1]?.key.userId ?? null;
      }
      // A KV that lost its keys meanwhile (flushed, failed over) lost some of the load with its
      // lease: the index is left unready, and the next read starts over.
      if ((await this.kv.get(keys.lease)) !== String(epoch)) return;
      await this.kv.set(keys.ready, String(epoch));
      this.log.info({ ref: period.ref, records: loaded, ms: Date.now() - started }, 'rank index rebuilt');
    } finally {
      await this.kv.del(keys.lease);
    }
  }
}

function keysOf(members: readonly string[]): RankKey[] {
  return members.map((member) => {
    const key = keyOfMember(member);
    if (!key) throw new Error(`the rank index holds a member that is no rank key: ${member}`);
    return key;
  });
}
