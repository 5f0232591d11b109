import { Migration } from '@mikro-orm/migrations';

/**
 * Leaderboards and tournaments (src/modules/leaderboards, docs/leaderboards.md).
 *
 * - A board or a tournament is named by its admin-chosen `id`; `ref` names this incarnation of it
 *   (a deleted id may be created again and starts empty), and is what records and rank index keys
 *   hang on. Records of boards and tournaments share one table: a tournament is one period.
 * - `rank_score` / `rank_subscore` are the score and subscore turned so that ascending order is
 *   the standings' order whatever the board's sort (negated for `desc`; exact, both within
 *   ±(2^53-1)): one index then answers pages, ranks (a count below a key) and neighbours for
 *   both sorts, and its key is the one the rank index sorts by.
 * - `version` grows with every change of a record, so index updates of one record applied out of
 *   order keep the latest (src/platform/kv, zreplaceVersioned).
 * - `leaderboard_periods` holds per standings and period what is not a record: a row per period
 *   that received a submission, with its end (null: a board without schedule), the epoch of its
 *   rank index (bumped when the index may have missed a change: then it is rebuilt, and answers
 *   come from SQL meanwhile) and when its end's event was recorded (the scheduler's one winner).
 * - An account deletion cascades to records and participations; a trigger bumps the epochs of
 *   the periods it removed a deleted account's records from (the service's own deletions keep
 *   their users and update the index themselves), and another keeps tournaments' `size`.
 */
export class Migration0033Leaderboards extends Migration {
  override up(): void {
    this.addSql(`
      create table leaderboards (
        id text collate "C" primary key,
        ref uuid not null unique,
        sort text not null check (sort in ('asc', 'desc')),
        operator text not null check (operator in ('best', 'set', 'incr')),
        reset_schedule text,
        authoritative boolean not null,
        metadata jsonb not null,
        created_at timestamptz not null
      )`);
    this.addSql(`
      create table tournaments (
        id text collate "C" primary key,
        ref uuid not null unique,
        title text not null,
        description text not null,
        sort text not null check (sort in ('asc', 'desc')),
        operator text not null check (operator in ('best', 'set', 'incr')),
        start_at timestamptz not null,
        end_at timestamptz not null,
        max_size integer check (max_size between 1 and 1000000),
        join_required boolean not null,
        authoritative boolean not null,
        metadata jsonb not null,
        created_at timestamptz not null,
        size integer not null default 0 check (size >= 0),
        ended_event_at timestamptz,
        check (start_at < end_at)
      )`);
    this.addSql('create index tournaments_start_idx on tournaments (start_at, id)');
    this.addSql('create index tournaments_end_idx on tournaments (end_at, id)');
    this.addSql(`
      create table tournament_members (
        tournament_ref uuid not null references tournaments (ref) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        joined_at timestamptz not null,
        primary key (tournament_ref, user_id)
      )`);
    this.addSql('create index tournament_members_user_idx on tournament_members (user_id)');
    // One sequence for every record change: versions stay increasing across a record's deletion
    // and recreation, which a per-record counter restarting at 1 would not.
    this.addSql('create sequence leaderboard_record_versions');
    this.addSql(`
      create table leaderboard_records (
        standings_ref uuid not null,
        period_start timestamptz not null,
        user_id uuid not null references users (id) on delete cascade,
        score bigint not null,
        subscore bigint not null,
        rank_score bigint not null,
        rank_subscore bigint not null,
        num_submissions integer not null,
        metadata jsonb not null,
        created_at timestamptz not null,
        updated_at timestamptz not null,
        version bigint not null default nextval('leaderboard_record_versions'),
        primary key (standings_ref, period_start, user_id)
      )`);
    this.addSql(`
      create index leaderboard_records_rank_idx on leaderboard_records
        (standings_ref, period_start, rank_score, rank_subscore, updated_at, user_id)`);
    this.addSql('create index leaderboard_records_user_idx on leaderboard_records (user_id)');
    this.addSql(`
      create table leaderboard_periods (
        standings_ref uuid not null,
        period_start timestamptz not null,
        period_end timestamptz,
        index_epoch bigint not null default 0,
        ended_event_at timestamptz,
        primary key (standings_ref, period_start)
      )`);
    // The scheduler's question, every second on every node: which periods still owe their event.
    this.addSql(
      'create index leaderboard_periods_pending_idx on leaderboard_periods (period_end) where ended_event_at is null',
    );
    this.addSql('create index tournaments_pending_idx on tournaments (end_at) where ended_event_at is null');
    this.addSql(`
      create function leaderboard_records_cascaded() returns trigger language plpgsql as $$
      begin
        -- Only the records of deleted accounts (the account deletion's cascade): the service's own
        -- deletions leave their users in place and update the rank index themselves.
        insert into leaderboard_periods as p (standings_ref, period_start, index_epoch)
        select distinct r.standings_ref, r.period_start, 1 from removed r
        where not exists (select 1 from users u where u.id = r.user_id)
        order by 1, 2
        on conflict (standings_ref, period_start) do update set index_epoch = p.index_epoch + 1;
        return null;
      end $$`);
    this.addSql(`
      create trigger leaderboard_records_cascaded after delete on leaderboard_records
      referencing old table as removed
      for each statement execute function leaderboard_records_cascaded()`);
    this.addSql(`
      create function tournament_members_removed() returns trigger language plpgsql as $$
      begin
        update tournaments t set size = t.size - gone.n
        from (select tournament_ref, count(*)::integer as n from removed group by tournament_ref) gone
        where t.ref = gone.tournament_ref;
        return null;
      end $$`);
    this.addSql(`
      create trigger tournament_members_removed after delete on tournament_members
      referencing old table as removed
      for each statement execute function tournament_members_removed()`);
  }
}
