import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { DataAccess } from '../../platform/data-access.js';
import { quotaExceeded } from '../../platform/quota.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import { liveServersCausedBy, lockUserSpawns } from './gameservers.repository.js';
import type { Spawner } from './spawner.js';

export interface SpawnAdmissionDeps {
  spawner: Spawner;
  /** Spawns per user and window (GAMESERVER_SPAWN_RATE_LIMIT_*), shared by every node. */
  limiter: RateLimiterAbstract;
  /** Live servers one user may have caused at once (GAMESERVER_MAX_LIVE_PER_USER). */
  liveLimit: number;
}

/**
 * Whether a user may cause one more game server (docs/gameservers.md, "Spawn limits"), checked in
 * the transaction that records the spawn, before anything is written: at most `liveLimit` live
 * servers they caused (409 QUOTA_EXCEEDED), room on this node, where a user who already has a
 * live server may not take the last slots (503 GAMESERVER_CAPACITY), then one point of their spawn
 * rate (429 RATE_LIMITED), spent last so that a refused spawn costs nothing.
 */
export class SpawnAdmission {
  constructor(private readonly deps: SpawnAdmissionDeps) {}

  async admit(data: DataAccess, userId: string): Promise<{ mayTakeLastSlots: boolean }> {
    const { spawner, limiter, liveLimit } = this.deps;
    await lockUserSpawns(data, userId);
    const live = await liveServersCausedBy(data, userId);
    if (live >= liveLimit) {
      throw quotaExceeded(
        `You already have ${live} game servers running that you started; at most ${liveLimit}.`,
        liveLimit,
      );
    }
    const mayTakeLastSlots = live === 0;
    const refusal = spawner.capacityRefusal?.(mayTakeLastSlots);
    if (refusal) throw refusal;
    await consumeOrThrow(limiter, userId, 'You started too many game servers; wait before starting more.');
    return { mayTakeLastSlots };
  }
}
