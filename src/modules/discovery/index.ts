import { discoveryGet, discoveryPut, discoverySearch } from '../../../protocol/discovery.js';
import type { DataAccess } from '../../platform/data-access.js';
import { newId } from '../../platform/ids.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import type { WorldsApi } from '../worlds/index.js';
import { recordVisit, syncWorld } from './discovery.repository.js';
import { DiscoveryService } from './discovery.service.js';
import { DiscoveryJobs } from './discovery-jobs.js';

/** What other modules may use of discovery: recording a join as a visit. */
export interface DiscoveryApi {
  /** Records a user's visit of a world (a join), in the caller's transaction; counted at the next fold. */
  recordVisit(
    data: DataAccess,
    visit: { worldId: string; userId: string; serverId: string; at: Date },
  ): Promise<void>;
  /** Folds the visits recorded so far into the counters now (the fold job's pass; operators and tests). */
  foldVisits(): Promise<number>;
  /** Takes a ranking snapshot now, whatever the age of the newest (operators and tests). */
  rankNow(): Promise<void>;
}

/** World discovery: metadata, search and its sorts, visit counting (docs/discovery.md). */
export const discoveryModule = defineModule({
  name: 'discovery',
  tables: ['world_visits', 'world_discovery', 'world_visitors', 'world_visit_hours', 'discovery_ranks'],
  needs: ['worlds'],
  setup({ config, log, ctx }, { worlds }: { worlds: WorldsApi }) {
    // Search reads its own copy of each world, written in the world's own transaction.
    worlds.onSaved((data, world) => syncWorld(data, world));
    const jobs = new DiscoveryJobs({
      data: () => ctx({ user: null, log, ip: 'internal' }).data,
      log,
      now: () => new Date(),
      settings: {
        foldIntervalSeconds: config.DISCOVERY_FOLD_INTERVAL_SECONDS,
        rankIntervalSeconds: config.DISCOVERY_RANK_INTERVAL_SECONDS,
      },
    });
    const discovery = new DiscoveryService({ worlds, jobs });
    const api: DiscoveryApi = {
      recordVisit: (data, visit) => recordVisit(data, { id: newId(), ...visit }),
      foldVisits: () => jobs.fold(),
      rankNow: () => jobs.rank(true),
    };
    return {
      api,
      operations: [
        serve(discoveryGet, (ctx, { world_id }) => discovery.get(ctx, world_id)),
        serve(discoveryPut, (ctx, { world_id, ...input }) => discovery.put(ctx, world_id, input)),
        serve(discoverySearch, (ctx, { tag, ...input }) => discovery.search(ctx, { ...input, tags: tag })),
      ],
      start: async () => jobs.start(),
      stop: () => jobs.stop(),
    };
  },
});
