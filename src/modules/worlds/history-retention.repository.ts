import { timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound } from '../../platform/db.js';

/**
 * The SQL of revision retention (docs/worlds.md, "Retention"). A world's horizon H only grows;
 * the pass deletes every revision r < H whose chunk has a newer revision at or below H, so the
 * newest revision at or below any T >= H survives for every chunk and each state from H on stays
 * exact. Each statement looks at a window of at most PRUNE_WINDOW_REVISIONS revisions of the
 * world, in id order, and leaves its progress in the world's row.
 */

/**
 * Revisions one statement looks at. A window deletes at most twice as many (its own, and one
 * older survivor per chunk in it); at 1 MiB each that is some 50 ms of Postgres' time, or of
 * PGlite's, which holds the service's event loop meanwhile.
 */
export const PRUNE_WINDOW_REVISIONS = 128;

/** Where a world's pruning stands (the columns of migration 0019). */
export interface HistoryState {
  worldId: string;
  contentRevision: number;
  horizon: number;
  prunedThrough: number;
  checkedThrough: number;
}

/**
 * Locks the world whose history has been due longest, if any, skipping worlds another
 * transaction holds: a writer's (which makes the world due again anyway) or another node's pass.
 */
export async function claimDueWorld(data: DataAccess, now: Date): Promise<HistoryState | undefined> {
  const [row] = await executeBound<{
    id: string;
    content_revision: string | number;
    history_horizon: string | number;
    history_pruned_through: string | number;
    history_checked_through: string | number;
  }>(
    data,
    `select id, content_revision, history_horizon, history_pruned_through, history_checked_through
     from worlds where history_due_at <= $1 order by history_due_at limit 1 for update skip locked`,
    [now],
  );
  return (
    row && {
      worldId: row.id,
      contentRevision: Number(row.content_revision),
      horizon: Number(row.history_horizon),
      prunedThrough: Number(row.history_pruned_through),
      checkedThrough: Number(row.history_checked_through),
    }
  );
}

/**
 * Lets this transaction's deletes of revisions through the append-only trigger (migration 0019),
 * which still refuses a revision at or above its world's horizon and a chunk's head.
 */
export async function armPruning(data: DataAccess): Promise<void> {
  await executeBound(data, `select set_config('atrium.pruning_revisions', 'on', true)`, []);
}

/**
 * Deletes what the horizon allows among the next window of revisions after `after` (up to the
 * horizon): for each chunk in the window, its revisions up to the window's end that are older
 * than its newest revision at or below the horizon, and takes their payload bytes off what the
 * world stores (its quota counts kept history). Returns how far the world is now pruned.
 */
export async function pruneWindow(
  data: DataAccess,
  worldId: string,
  after: number,
  horizon: number,
): Promise<number> {
  const [row] = await executeBound<{ through: string | number }>(
    data,
    `with win as (
       select id, chunk_id from chunk_revisions
       where world_id = $1 and id > $2 and id <= $3 order by id limit $4
     ), bounds as (
       select max(id) as last, count(*) as looked from win
     ), kept as (
       select d.chunk_id, (
         select r.id from chunk_revisions r where r.chunk_id = d.chunk_id and r.id <= $3 order by r.id desc limit 1
       ) as keep
       from (select distinct chunk_id from win) d
     ), gone as (
       delete from chunk_revisions r using kept k
       where r.chunk_id = k.chunk_id and r.id < k.keep and r.id <= (select last from bounds)
       returning octet_length(r.payload) as bytes
     ), through as (
       select case when looked < $4 then $3 else last end as through from bounds
     ), moved as (
       update worlds set history_pruned_through = (select through from through),
         stored_bytes = stored_bytes - (select coalesce(sum(bytes), 0) from gone)
       where id = $1
     )
     select through from through`,
    [worldId, after, horizon, PRUNE_WINDOW_REVISIONS],
  );
  return Number(row?.through ?? horizon);
}

/**
 * Looks at the chunks written in the next window of revisions after `after`: the largest id among
 * their `maxRevisions`-th newest revisions is a horizon that keeps each of them within the cap.
 * Returns how far the world is now checked, and that horizon (0 when no chunk is over the cap).
 */
export async function checkCaps(
  data: DataAccess,
  state: { worldId: string; after: number; contentRevision: number },
  maxRevisions: number,
): Promise<{ through: number; capHorizon: number }> {
  const [row] = await executeBound<{ through: string | number; cap_horizon: string | number | null }>(
    data,
    `with win as (
       select id, chunk_id from chunk_revisions where world_id = $1 and id > $2 order by id limit $3
     ), through as (
       select case when count(*) < $3 then $4 else max(id) end as through from win
     ), moved as (
       update worlds set history_checked_through = (select through from through) where id = $1
     )
     select (select through from through) as through, max(cap.id) as cap_horizon
     from (select distinct chunk_id from win) d
     cross join lateral (
       select r.id from chunk_revisions r where r.chunk_id = d.chunk_id order by r.id desc offset $5 limit 1
     ) cap`,
    [state.worldId, state.after, PRUNE_WINDOW_REVISIONS, state.contentRevision, maxRevisions - 1],
  );
  return {
    through: Number(row?.through ?? state.contentRevision),
    capHorizon: Number(row?.cap_horizon ?? 0),
  };
}

/**
 * The largest id created at or before `cutoff` among the next window of revisions after `horizon`,
 * and when the first of them was created (null when there is none), to the microsecond: the time
 * the horizon can next move by age (scheduleNextPass). Ids and creation times go together closely
 * enough (a writer takes its time before waiting for the lock) that the window stops where the
 * young revisions begin; a horizon found this way is never later than the exact one, only
 * sometimes earlier.
 */
export async function agedHorizon(
  data: DataAccess,
  worldId: string,
  horizon: number,
  cutoff: Date,
): Promise<{ aged: number; firstCreatedAt: string | null }> {
  const [row] = await executeBound<{ aged: string | number | null; first_created_at: string | null }>(
    data,
    `select max(id) filter (where created_at <= $3) as aged,
            ${timeKeySql('(array_agg(created_at order by id))[1]')} as first_created_at
     from (select id, created_at from chunk_revisions where world_id = $1 and id > $2 order by id limit $4) w`,
    [worldId, horizon, cutoff, PRUNE_WINDOW_REVISIONS],
  );
  return { aged: Number(row?.aged ?? 0), firstCreatedAt: row?.first_created_at ?? null };
}

export async function raiseHorizon(data: DataAccess, worldId: string, horizon: number): Promise<void> {
  await executeBound(
    data,
    'update worlds set history_horizon = greatest(history_horizon, $2) where id = $1',
    [worldId, horizon],
  );
}

/**
 * Sets when the world next needs a pass: `retentionSeconds` after its oldest revision above the
 * horizon was created (agedHorizon's `firstCreatedAt`), when the horizon will move again (never,
 * until the next write, when there is none); or `now`, behind the other due worlds, when this
 * pass had to stop before its end. A finished pass found that revision younger than the cutoff,
 * so its time is later than `now`: to the microsecond, since a time cut to the millisecond could
 * be `now` itself, and the pass would take the world again and again. The time comes from the
 * pass: looked up here from the row's horizon, a value the planner cannot see, it walked the
 * primary key through other worlds' revisions (230 ms on Postgres beside a world of a million),
 * holding the world's writers.
 */
export async function scheduleNextPass(
  data: DataAccess,
  worldId: string,
  next:
    | { finished: true; firstCreatedAt: string | null; retentionSeconds: number }
    | { finished: false; now: Date },
): Promise<void> {
  const [from, seconds] = next.finished ? [next.firstCreatedAt, next.retentionSeconds] : [next.now, 0];
  await executeBound(
    data,
    'update worlds set history_due_at = $2::timestamptz + make_interval(secs => $3) where id = $1',
    [worldId, from, seconds],
  );
}
