import { configFrom } from '../../src/config.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { migrateUp } from '../../src/platform/migrate.js';
import { pgbenchUuid, userIdOf } from '../chat/ceiling.js';

/**
 * The groups benchmark's database, written in bulk with SQL before the service starts (10,000
 * REST joins would take minutes and measure nothing): users numbered from 1 (ids as
 * bench/chat/ceiling.ts spells them, so pgbench derives them from numbers), a roster group of
 * MEMBERS (user 1 its owner, user n joined EPOCH + n ms, so the roster's order is member order
 * and page p starts after member PAGE * p), and two open groups for the joins: the service's and
 * the ceiling's. The roster trigger keeps member_count; rows go in one statement per group, and
 * ANALYZE runs after, so the roster index is planned with its real size.
 */

export const MEMBERS = 10_000;
export const PAGE = 100;
const EPOCH = "timestamptz '2026-01-01 00:00:00+00'";
/** When member n joined the roster group (SQL of the number `n`). */
export const joinedAtSql = (n: string) => `${EPOCH} + (${n}) * interval '1 millisecond'`;
/** The ceiling's joiners are numbered by this sequence, so pgbench clients never take the same one. */
export const JOINER_SEQUENCE = 'bench_groups_joiners';

export interface GroupsSeed {
  prefix: string;
  /** User n's id, n from 1. */
  idOf: (n: number) => string;
  rosterGroup: string;
  joinGroup: string;
  ceilingJoinGroup: string;
  /** Users MEMBERS + 1 … MEMBERS + serviceJoiners join the service's group, one REST join each. */
  serviceJoiners: number;
  ceilingJoiners: number;
}

export async function seedGroups(
  env: Record<string, string>,
  prefix: string,
  serviceJoiners: number,
  ceilingJoiners: number,
): Promise<GroupsSeed> {
  // Bulk statements run past the service's query timeout (the roster's 10,000 trigger updates).
  const config = configFrom({ ...env, DATABASE_QUERY_TIMEOUT_MS: '0' });
  const db = await openDatabase(config);
  // The id of user n as SQL of a number column, spelled as pgbench scripts spell it.
  const uuid = (column: string) => pgbenchUuid(prefix, 'n').replace(':n', column);
  const [rosterGroup, joinGroup, ceilingJoinGroup] = [newId(), newId(), newId()];
  const owner = userIdOf(prefix)(1);
  try {
    await migrateUp(db, config.DATABASE_URL);
    const sql = (text: string, params: unknown[] = []) => executeBound(db.data, text, params);
    await sql(
      `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
       select ${uuid('n')}, 'bench_' || n, '!', now(), now()
       from generate_series(1, $1::int) n`,
      [MEMBERS + serviceJoiners + ceilingJoiners],
    );
    await sql(
      `insert into groups (id, name, join_policy, owner_id)
       values ($1, 'bench roster', 'open', $4), ($2, 'bench joins', 'open', $4), ($3, 'bench joins ceiling', 'open', $4)`,
      [rosterGroup, joinGroup, ceilingJoinGroup, owner],
    );
    await sql(
      `insert into group_members (group_id, user_id, role, joined_at)
       select g, $4::uuid, 'owner', ${joinedAtSql('1')} from unnest(array[$1, $2, $3]::uuid[]) g`,
      [rosterGroup, joinGroup, ceilingJoinGroup, owner],
    );
    await sql(
      `insert into group_members (group_id, user_id, role, joined_at)
       select $1, ${uuid('n')}, 'member', ${joinedAtSql('n')} from generate_series(2, $2::int) n`,
      [rosterGroup, MEMBERS],
    );
    await sql(`create sequence ${JOINER_SEQUENCE} start with ${MEMBERS + serviceJoiners + 1}`);
    await sql('analyze');
    return {
      prefix,
      idOf: userIdOf(prefix),
      rosterGroup,
      joinGroup,
      ceilingJoinGroup,
      serviceJoiners,
      ceilingJoiners,
    };
  } finally {
    await db.close();
  }
}
