import type { Backlog } from './backlog-gauges.js';
import type { DataAccess } from './data-access.js';
import { executeBound } from './db.js';
import { toUuidArray } from './ids.js';
import type { Logger } from './log.js';

/**
 * The outbox's statements (migration 0031): events with one delivery row per consumer, claimed by
 * the nodes with `for update skip locked` and leased by pushing `next_attempt_at` ahead. Times are
 * the database's (`now()`), so the nodes' clocks never decide who may claim what.
 */

/** A delivery a node claimed: its event, its consumer and the claims it has had, this one included. */
export interface ClaimedDelivery {
  event_id: string;
  consumer: string;
  attempts: number;
  type: string;
  data: unknown;
  at: Date;
}

/**
 * The events (data given as one JSON array, ids in the same order) and a due delivery of each to
 * every consumer named, in one statement. `at` is the transaction's time. Exported for pgbench
 * ceilings (bench/economy/ceiling.ts), which run it as is.
 */
export const RECORD_EVENTS_SQL = `
  with events as (
    insert into outbox_events (id, type, data, at)
    select ($1::uuid[])[d.n], $2, d.data, now()
    from jsonb_array_elements($3::jsonb) with ordinality as d (data, n)
    returning id)
  insert into outbox_deliveries (event_id, consumer, attempts, next_attempt_at)
  select events.id, c.name, 0, now() from events cross join unnest($4::text[]) as c (name)`;

/**
 * RECORD_EVENTS_SQL for consumers of which some take an event only while a condition holds
 * (`OutboxConsumer.onlyIf`, in `conditions` in the order of the names bound as $4), checked in the
 * recording statement: the event gets a delivery for each consumer whose condition holds, and is
 * not written at all when none does. The conditions are the consumers' modules' named SQL
 * fragments, never input. Answers one row per delivery written.
 */
export function recordEventsSql(conditions: readonly (string | undefined)[]): string {
  if (conditions.every((condition) => condition === undefined)) return `${RECORD_EVENTS_SQL} returning 1`;
  const wanted = conditions
    .map((condition, i) => `select ($4::text[])[${i + 1}] as name where ${condition ?? 'true'}`)
    .join('\n    union all ');
  return `
  with wanted as (
    ${wanted}),
  events as (
    insert into outbox_events (id, type, data, at)
    select ($1::uuid[])[d.n], $2, d.data, now()
    from jsonb_array_elements($3::jsonb) with ordinality as d (data, n)
    where exists (select 1 from wanted)
    returning id)
  insert into outbox_deliveries (event_id, consumer, attempts, next_attempt_at)
  select events.id, wanted.name, 0, now() from events cross join wanted
  returning 1`;
}

/** Records events by `sql` (recordEventsSql); answers how many deliveries it wrote. */
export async function insertEvents(
  tx: DataAccess,
  sql: string,
  ids: readonly string[],
  type: string,
  dataJson: string,
  consumers: readonly string[],
): Promise<number> {
  return (await executeBound(tx, sql, [toUuidArray(ids), type, dataJson, consumers])).length;
}

/**
 * Claims up to $3 due deliveries of the consumers named in $1, oldest first, skipping those another
 * node is claiming: each one's attempts go up by one and its lease (the consumer's seconds, $2 in
 * the order of $1) starts. One statement, so the claim commits at once.
 */
const CLAIM_SQL = `
  with due as (
    select event_id, consumer from outbox_deliveries
    where next_attempt_at <= now() and consumer = any($1::text[])
    order by next_attempt_at
    limit $3
    for update skip locked)
  update outbox_deliveries d
  set attempts = d.attempts + 1, next_attempt_at = now() + c.lease * interval '1 second'
  from due, unnest($1::text[], $2::float8[]) as c (name, lease), outbox_events e
  where d.event_id = due.event_id and d.consumer = due.consumer and c.name = d.consumer and e.id = d.event_id
  returning d.event_id, d.consumer, d.attempts, e.type, e.data, e.at`;

export function claimDue(
  data: DataAccess,
  consumers: readonly string[],
  leaseSeconds: readonly number[],
  limit: number,
): Promise<ClaimedDelivery[]> {
  return executeBound<ClaimedDelivery>(data, CLAIM_SQL, [consumers, leaseSeconds, limit]);
}

/** A delivery to remove (done, or dropped); with `attempts`, only if no claim since took it. */
export interface FinishedDelivery {
  event_id: string;
  consumer: string;
  attempts: number | null;
}

/**
 * Removes deliveries (done, or dropped), in one statement, and each event with them that has no
 * other delivery left. With `attempts`, only the claim that many attempts made: a node whose
 * lease lapsed cannot drop what another node claimed since. Two nodes finishing the consumers of
 * one event at once may each see the other's row and leave the event; pruneOrphanEvents removes
 * it later.
 */
const FINISH_SQL = `
  with gone as (
    delete from outbox_deliveries d
    using unnest($1::uuid[], $2::text[], $3::integer[]) as f (event_id, consumer, attempts)
    where d.event_id = f.event_id and d.consumer = f.consumer and (f.attempts is null or d.attempts = f.attempts)
    returning d.event_id, d.consumer)
  delete from outbox_events e
  where e.id in (select event_id from gone)
    and not exists (
      select 1 from outbox_deliveries d
      where d.event_id = e.id
        and not exists (select 1 from gone g where g.event_id = d.event_id and g.consumer = d.consumer))`;

/** Answers one (nothing) per delivery, as `batched` wants. */
export async function finishDeliveries(
  data: DataAccess,
  deliveries: readonly FinishedDelivery[],
): Promise<undefined[]> {
  await executeBound(data, FINISH_SQL, [
    toUuidArray(deliveries.map((delivery) => delivery.event_id)),
    deliveries.map((delivery) => delivery.consumer),
    deliveries.map((delivery) => delivery.attempts),
  ]);
  return deliveries.map(() => undefined);
}

/** Makes a failed delivery due again after `delayMs`, unless another claim took it since. */
export async function retryLater(
  data: DataAccess,
  delivery: ClaimedDelivery,
  delayMs: number,
): Promise<void> {
  await executeBound(
    data,
    `update outbox_deliveries set next_attempt_at = now() + $4 * interval '1 millisecond'
     where event_id = $1 and consumer = $2 and attempts = $3`,
    [delivery.event_id, delivery.consumer, delivery.attempts, delayMs],
  );
}

/**
 * Drops up to `limit` deliveries no node claimed for `seconds` past their due time, answering
 * their consumers: no node takes those consumers any more (an extension removed from the config).
 */
export async function dropAbandoned(data: DataAccess, seconds: number, limit: number): Promise<string[]> {
  const rows = await executeBound<{ consumer: string }>(
    data,
    `delete from outbox_deliveries where ctid = any(array(
       select ctid from outbox_deliveries where next_attempt_at < now() - $1 * interval '1 second' limit $2))
     returning consumer`,
    [seconds, limit],
  );
  return rows.map((row) => row.consumer);
}

/**
 * Deletes up to `limit` events with no delivery left (see FINISH_SQL, and dropAbandoned's). An
 * event is recorded with its deliveries in one statement, so one without any is never on its way.
 */
export async function pruneOrphanEvents(data: DataAccess, limit: number): Promise<number> {
  const rows = await executeBound(
    data,
    `delete from outbox_events where ctid = any(array(
       select e.ctid from outbox_events e
       where not exists (select 1 from outbox_deliveries d where d.event_id = e.id)
       limit $1))
     returning 1`,
    [limit],
  );
  return rows.length;
}

/** The most rows one prune statement deletes. */
const PRUNE_BATCH = 1000;

/**
 * Drops the deliveries no node claimed for `abandonAfterSeconds` past their due time (saying for
 * which consumers), then events left without deliveries; never rejects.
 */
export async function pruneOutbox(
  data: DataAccess,
  log: Pick<Logger, 'warn'>,
  abandonAfterSeconds: number,
): Promise<void> {
  try {
    const dropped = await dropAbandoned(data, abandonAfterSeconds, PRUNE_BATCH);
    if (dropped.length > 0) {
      log.warn(
        { count: dropped.length, consumers: [...new Set(dropped)] },
        'outbox: dropped deliveries no node claimed; no node takes their consumer',
      );
    }
    await pruneOrphanEvents(data, PRUNE_BATCH);
  } catch (err) {
    log.warn({ err }, 'outbox: pruning failed; it runs again later');
  }
}

/** The deliveries due and not claimed (a claim's lease pushes its due time ahead), and the oldest one's wait. */
export async function readBacklog(data: DataAccess): Promise<Backlog> {
  const [row] = await executeBound<{ due: number; oldest: number }>(
    data,
    `select count(*)::int as due, coalesce(extract(epoch from now() - min(next_attempt_at)), 0)::float8 as oldest
     from outbox_deliveries where next_attempt_at <= now()`,
    [],
  );
  return { due: row?.due ?? 0, oldestDueSeconds: row?.oldest ?? 0 };
}
