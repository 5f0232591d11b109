import {
  internalLeaderboardsDelete,
  internalLeaderboardsSubmit,
  leaderboardsAdminDeleteRecord,
  leaderboardsCreate,
  leaderboardsDelete,
  leaderboardsDeleteMine,
  leaderboardsGet,
  leaderboardsList,
  leaderboardsRecord,
  leaderboardsRecords,
  leaderboardsSubmit,
} from '../../../protocol/leaderboards.js';
import {
  internalTournamentsSubmit,
  tournamentsCreate,
  tournamentsDelete,
  tournamentsGet,
  tournamentsJoin,
  tournamentsList,
  tournamentsRecord,
  tournamentsRecords,
  tournamentsSubmit,
} from '../../../protocol/tournaments.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import { friendIdsSql, type SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import { type LeaderboardsAccess, leaderboardsAccess } from './extension-access.js';
import { friendsPageStatement } from './guarded.repository.js';
import { LeaderboardsService } from './leaderboards.service.js';
import { RankIndex } from './rank-index.js';
import { LeaderboardScheduler } from './scheduler.js';
import { StandingsReader } from './standings.js';
import { TournamentsService } from './tournaments.service.js';
import { Writers } from './writers.js';

export type { LeaderboardsAccess } from './extension-access.js';

/** How soon a scheduler pass follows one that left ended periods to the node holding their board. */
const SCHEDULER_INTERVAL_MS = 500;
/** The longest a scheduler sleeps with no end known sooner: ends noted on any node wake it before. */
const SCHEDULER_REST_MS = 5_000;

export interface LeaderboardsApi {
  /** One scheduler pass now (tests): announces every ended period, once. */
  runScheduler(): Promise<void>;
  /** Server extensions' `ctx.leaderboards`. */
  access: LeaderboardsAccess;
}

/** Leaderboards and tournaments (docs/leaderboards.md). */
export const leaderboardsModule = defineModule({
  name: 'leaderboards',
  tables: ['leaderboards', 'leaderboard_records', 'leaderboard_periods', 'tournaments', 'tournament_members'],
  needs: ['users', 'audit', 'social'],
  setup(
    { config, kv, log, db, outbox, ctx, bus },
    { users, audit }: { users: UsersApi; audit: AuditApi; social: SocialApi },
  ) {
    const index = new RankIndex(kv, log, () => db.data);
    const reader = new StandingsReader(index, friendsPageStatement(friendIdsSql));
    const writers = new Writers(
      users,
      createLimiter(kv, {
        keyPrefix: 'leaderboard-submit',
        points: config.LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT,
        durationSeconds: config.LEADERBOARD_SUBMIT_RATE_LIMIT_WINDOW_SECONDS,
      }),
    );
    const scheduler = new LeaderboardScheduler({
      data: () => db.data,
      outbox,
      index,
      log,
      clock: () => new Date(),
      intervalMs: SCHEDULER_INTERVAL_MS,
      restMs: SCHEDULER_REST_MS,
      bus,
      periodsKept: config.LEADERBOARD_PERIODS_KEPT,
    });
    const boards = new LeaderboardsService({ index, reader, audit, writers, ends: scheduler });
    const tournaments = new TournamentsService({ index, reader, audit, writers, ends: scheduler });
    const server = (ctx: { service: { id: string } | null }, userId: string) => {
      if (!ctx.service) throw new Error('an internal operation ran without a game server');
      return { kind: 'server' as const, userId };
    };
    const api: LeaderboardsApi = {
      runScheduler: () => scheduler.runOnce(),
      access: leaderboardsAccess(boards, tournaments, () =>
        ctx({ user: null, service: null, log, ip: 'internal' }),
      ),
    };
    return {
      api,
      async start() {
        scheduler.start();
      },
      stop: () => scheduler.stop(),
      operations: [
        serve(leaderboardsCreate, (ctx, input) => boards.create(ctx, input)),
        serve(leaderboardsDelete, (ctx, { leaderboard_id }) => boards.delete(ctx, leaderboard_id)),
        serve(leaderboardsList, (ctx, query) => boards.list(ctx, query)),
        serve(leaderboardsGet, (ctx, { leaderboard_id }) => boards.get(ctx, leaderboard_id)),
        serve(leaderboardsSubmit, (ctx, { leaderboard_id, ...input }) =>
          boards.submit(ctx, leaderboard_id, input, { kind: 'user' }),
        ),
        serve(leaderboardsRecords, (ctx, { leaderboard_id, ...query }) =>
          boards.records(ctx, leaderboard_id, query),
        ),
        serve(leaderboardsRecord, (ctx, { leaderboard_id, user_id, period }) =>
          boards.record(ctx, leaderboard_id, user_id, period),
        ),
        serve(leaderboardsDeleteMine, (ctx, { leaderboard_id }) =>
          boards.deleteRecord(ctx, leaderboard_id, { kind: 'user' }),
        ),
        serve(leaderboardsAdminDeleteRecord, (ctx, { leaderboard_id, user_id, reason }) =>
          boards.adminDeleteRecord(ctx, leaderboard_id, user_id, reason),
        ),
        serve(internalLeaderboardsSubmit, (ctx, { leaderboard_id, user_id, ...input }) =>
          boards.submit(ctx, leaderboard_id, input, server(ctx, user_id)),
        ),
        serve(tournamentsCreate, (ctx, input) => tournaments.create(ctx, input)),
        serve(tournamentsDelete, (ctx, { tournament_id }) => tournaments.delete(ctx, tournament_id)),
        serve(tournamentsList, (ctx, query) => tournaments.list(ctx, query)),
        serve(tournamentsGet, (ctx, { tournament_id }) => tournaments.get(ctx, tournament_id)),
        serve(tournamentsJoin, (ctx, { tournament_id }) => tournaments.join(ctx, tournament_id)),
        serve(tournamentsSubmit, (ctx, { tournament_id, ...input }) =>
          tournaments.submit(ctx, tournament_id, input, { kind: 'user' }),
        ),
        serve(tournamentsRecords, (ctx, { tournament_id, ...query }) =>
          tournaments.records(ctx, tournament_id, query),
        ),
        serve(tournamentsRecord, (ctx, { tournament_id, user_id }) =>
          tournaments.record(ctx, tournament_id, user_id),
        ),
        serve(internalTournamentsSubmit, (ctx, { tournament_id, user_id, ...input }) =>
          tournaments.submit(ctx, tournament_id, input, server(ctx, user_id)),
        ),
        serve(internalLeaderboardsDelete, (ctx, { leaderboard_id, user_id }) =>
          boards.deleteRecord(ctx, leaderboard_id, server(ctx, user_id)),
        ),
      ],
    };
  },
});
