import type { z } from 'zod';
import { internalLeaderboardsSubmit, leaderboardsRecords } from '../../../protocol/leaderboards.js';
import { internalTournamentsSubmit, tournamentsRecords } from '../../../protocol/tournaments.js';
import type { Ctx } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { LeaderboardsService } from './leaderboards.service.js';
import type { TournamentsService } from './tournaments.service.js';

/**
 * What server extensions reach as `ctx.leaderboards` (docs/extensions.md): submissions as a game
 * server makes them (any board or tournament, authoritative too, no rate limit, the same operators,
 * windows and join rules) and standings reads with every read option but the caller's own
 * (`around=me`, `friends`). Arguments are checked with the internal routes' schemas, since
 * extension code may pass anything.
 */
export interface LeaderboardsAccess {
  submit(input: unknown): Promise<unknown>;
  submitToTournament(input: unknown): Promise<unknown>;
  records(leaderboardId: unknown, query?: unknown): Promise<unknown>;
  tournamentRecords(tournamentId: unknown, query?: unknown): Promise<unknown>;
}

function parsed<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors = result.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  throw new AppError(
    ErrorCode.VALIDATION_FAILED,
    errors.map((error) => (error.path ? `${error.path}: ${error.message}` : error.message)).join('; '),
    { errors },
  );
}

const objectOr = (value: unknown) => (value !== null && typeof value === 'object' ? value : {});

export function leaderboardsAccess(
  boards: LeaderboardsService,
  tournaments: TournamentsService,
  ctxOf: () => Ctx,
): LeaderboardsAccess {
  return {
    submit: (input) => {
      const { leaderboard_id, user_id, ...submission } = parsed(internalLeaderboardsSubmit.request, input);
      return boards.submit(ctxOf(), leaderboard_id, submission, { kind: 'server', userId: user_id });
    },
    submitToTournament: (input) => {
      const { tournament_id, user_id, ...submission } = parsed(internalTournamentsSubmit.request, input);
      return tournaments.submit(ctxOf(), tournament_id, submission, { kind: 'server', userId: user_id });
    },
    records: (leaderboardId, query) => {
      const { leaderboard_id, ...read } = parsed(leaderboardsRecords.request, {
        ...objectOr(query),
        leaderboard_id: leaderboardId,
      });
      return boards.recordsFor(ctxOf(), leaderboard_id, read, null);
    },
    tournamentRecords: (tournamentId, query) => {
      const { tournament_id, ...read } = parsed(tournamentsRecords.request, {
        ...objectOr(query),
        tournament_id: tournamentId,
      });
      return tournaments.recordsFor(ctxOf(), tournament_id, read, null);
    },
  };
}
