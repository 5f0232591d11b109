import { DISCOVERY_CATEGORIES } from '../../protocol/discovery.js';
import { configFrom } from '../../src/config.js';
import { DiscoveryJobs } from '../../src/modules/discovery/discovery-jobs.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import { createLogger } from '../../src/platform/log.js';
import { migrateUp } from '../../src/platform/migrate.js';
import { pgbenchUuid, userIdOf } from '../chat/ceiling.js';
import { progress } from '../realtime/progress.js';

/**
 * The discovery benchmark's database, written with SQL before the service starts: OWNERS users
 * owning WORLDS public worlds, each with the discovery row an owner's PUT would leave (a title of
 * 3 and a description of 15 words from WORDS, 1-5 of 200 tags, a category), the words and tags
 * drawn with a skew (index = size x r², r uniform), so a common word or tag matches a realistic
 * fraction and a rare one few; hourly visit buckets over the last 192 hours for one world in
 * five, so popular and trending rank differently. "Random" is a hash of the world's number: every
 * run seeds the same data. Then the jobs on it, timed: folds of pending visits and ranking
 * snapshots (the product's own DiscoveryJobs on this database), and ANALYZE.
 */

export const WORLDS = 100_000;
const OWNERS = 10;
const TAGS = 200;
/** Visits pending for each timed fold: what 1,000 joins/s leave in a fold interval (5 s), and a backlog. */
export const FOLD_SIZES = [5_000, 50_000] as const;
export const SNAPSHOTS = 3;
/** The joiners' ids come from this sequence in the pgbench joins, so clients never take the same one. */
export const JOINER_SEQUENCE = 'bench_discovery_joiners';

export const WORDS = `castle forest river city space island dungeon racing music dance party chill pixel neon
  ocean mountain desert tower garden village station farm school museum arena maze puzzle horror
  zombie dragon robot pirate ninja wizard galaxy planet sunset night winter summer lake cave temple
  ruins market cafe club beach jungle volcano bridge harbor library theater studio gallery park
  carnival circus kingdom empire`.split(/\s+/);

/** A uniform number in [0, 1) from the SQL integer `n` and a salt: a hash, the same every run. */
const rnd = (n: string, salt: string) =>
  `((hashtext((${n})::text || '${salt}') & 2147483647)::float8 / 2147483648)`;
/** A skewed index in 1 … size: low indexes are common. */
const skewed = (size: number, n: string, salt: string) =>
  `(1 + floor(${size} * power(${rnd(n, salt)}, 2))::int)`;

export interface DiscoverySeed {
  prefix: string;
  idOf: (n: number) => string;
  worldOf: (n: number) => string;
  /** The search's common word and tag, and how many public worlds each matches. */
  word: string;
  tag: string;
  wordMatches: number;
  tagMatches: number;
  /** The service's hot world and the two ceilings' worlds, each with one ready game server. */
  hot: { world: string; server: string };
  ceilingWith: { world: string; server: string };
  ceilingWithout: { world: string; server: string };
  serviceJoiners: number;
  /** The first user joining the service's hot world. */
  firstJoiner: number;
  foldMs: { visits: number; ms: number }[];
  snapshotMs: number[];
}

export async function seedDiscovery(
  env: Record<string, string>,
  prefix: string,
  serviceJoiners: number,
  ceilingJoiners: number,
): Promise<DiscoverySeed> {
  const config = configFrom({ ...env, DATABASE_QUERY_TIMEOUT_MS: '0' });
  const db = await openDatabase(config);
  const userSql = (column: string) => pgbenchUuid(prefix, 'n').replace(':n', `(${column})`);
  // Worlds and servers are numbered in uuids of their own, as users are.
  const worldSql = (column: string) => userSql(column).replace("-0000-7000-8000-'", "-0001-7000-8000-'");
  const serverSql = (column: string) => userSql(column).replace("-0000-7000-8000-'", "-0002-7000-8000-'");
  const id = (kind: string) => (n: number) => userIdOf(prefix)(n).replace('-0000-7000-', `-${kind}-7000-`);
  const worldOf = id('0001');
  const serverOf = id('0002');
  const users = OWNERS + serviceJoiners + ceilingJoiners;
  try {
    await migrateUp(db, config.DATABASE_URL);
    const sql = (text: string, params: unknown[] = []) => executeBound(db.data, text, params);
    const timed = async (label: string, text: string, params: unknown[] = []) => {
      const started = performance.now();
      await sql(text, params);
      progress(`seed: ${label} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    };
    await timed(
      `${users} users`,
      `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
       select ${userSql('n')}, 'bench_' || n, '!', now(), now() from generate_series(1, $1::int) n`,
      [users],
    );
    await timed(
      `${WORLDS} public worlds`,
      `insert into worlds (id, owner_id, name, description, visibility, created_at, updated_at)
       select ${worldSql('n')}, ${userSql(`1 + n % ${OWNERS}`)}, 'world ' || n, '', 'public', t, t
       from generate_series(1, $1::int) n, lateral (select now() - ${rnd('n', 'c')} * interval '365 days' as t) c`,
      [WORLDS],
    );
    const words = `(array[${WORDS.map((w) => `'${w}'`).join(',')}])`;
    const categories = `(array[${DISCOVERY_CATEGORIES.map((c) => `'${c}'`).join(',')}])`;
    await timed(
      `${WORLDS} discovery rows`,
      `insert into world_discovery (world_id, owner_id, world_name, world_description, is_public, world_created_at,
         updated_at, title, description, tags, category)
       select w.id, w.owner_id, w.name, w.description, true, w.created_at, w.updated_at,
         (select string_agg(${words}[${skewed(WORDS.length, 'n * 100 + k', 't')}], ' ') from generate_series(1, 3) k),
         (select string_agg(${words}[${skewed(WORDS.length, 'n * 100 + k', 'd')}], ' ') from generate_series(1, 15) k),
         array(select distinct 'tag-' || ${skewed(TAGS, 'n * 100 + k', 'g')} from generate_series(0, n % 5) k),
         ${categories}[1 + floor(${DISCOVERY_CATEGORIES.length} * ${rnd('n', 'k')})::int]
       from generate_series(1, $1::int) n join worlds w on w.id = ${worldSql('n')}
       on conflict (world_id) do update set title = excluded.title, description = excluded.description,
         tags = excluded.tags, category = excluded.category, is_public = true`,
      [WORLDS],
    );
    await timed(
      'hourly visit buckets for one world in five',
      `insert into world_visit_hours (world_id, hour, visits)
       select ${worldSql('n')}, date_trunc('hour', now()) - floor(192 * ${rnd('n * 10 + k', 'h')}) * interval '1 hour',
         1 + floor(1000 * power(${rnd('n * 10 + k', 'v')}, 3))
       from generate_series(5, $1::int, 5) n, generate_series(1, 8) k
       on conflict do nothing`,
      [WORLDS],
    );
    // Worlds 1-3: the service's hot world and the ceilings' worlds, each with a ready server as
    // one that reported ready would be (no process: a join only reads and reserves the row).
    await sql(
      `insert into game_servers (id, world_id, requested_by, backend, status, address, token_hash, players,
         max_players, created_at, ready_at, ready_deadline, busy_at)
       select ${serverSql('n')}, ${worldSql('n')}, ${userSql('1')}, 'local', 'ready', '127.0.0.1:' || (7000 + n),
         sha256(('bench' || n)::bytea), 0, 100000000, now(), now(), now() + interval '1 minute', now()
       from generate_series(1, 3) n`,
    );
    await sql(`create sequence ${JOINER_SEQUENCE} start with ${OWNERS + serviceJoiners + 1}`);

    const jobs = new DiscoveryJobs({
      data: () => db.data,
      log: createLogger({ LOG_LEVEL: 'warn' }),
      now: () => new Date(),
      settings: { foldIntervalSeconds: 3600, rankIntervalSeconds: 3600 },
    });
    const foldMs: DiscoverySeed['foldMs'] = [];
    for (const visits of FOLD_SIZES) {
      // Visits of 1,000 worlds by their owners, the first of each pair a first visit.
      await sql(
        `with v as (
           select ${worldSql(`1 + (k % 1000) * 97`)} as world_id, ${userSql(`1 + k % ${OWNERS}`)} as user_id,
             now() - (k % 3600) * interval '1 second' as at
           from generate_series(1, $1::int) k),
         visitors as (
           insert into world_visitors (world_id, user_id, first_visited_at)
           select distinct on (world_id, user_id) world_id, user_id, at from v on conflict do nothing)
         insert into world_visits (id, world_id, user_id, server_id, visited_at)
         select gen_random_uuid(), world_id, user_id, null, at from v`,
        [visits],
      );
      const started = performance.now();
      const folded = await jobs.fold();
      foldMs.push({ visits: folded, ms: performance.now() - started });
    }
    const snapshotMs: number[] = [];
    for (let i = 0; i < SNAPSHOTS; i++) {
      const started = performance.now();
      await jobs.rank(true);
      snapshotMs.push(performance.now() - started);
    }
    progress(
      `seed: folds ${foldMs.map((f) => `${f.visits} visits ${f.ms.toFixed(0)} ms`).join(', ')}; snapshots of ${WORLDS} worlds ${snapshotMs.map((ms) => ms.toFixed(0)).join(', ')} ms`,
    );
    await sql('analyze');

    const word = WORDS[7] as string;
    const tag = 'tag-3';
    const [counts] = await sql(
      `select (select count(*) from world_discovery d where d.is_public and d.search @@ websearch_to_tsquery('simple', $1))::int as word,
              (select count(*) from world_discovery d where d.is_public and d.tags @> array[$2]::text[])::int as tag`,
      [word, tag],
    );
    const { word: wordMatches, tag: tagMatches } = counts as { word: number; tag: number };
    const pair = (n: number) => ({ world: worldOf(n), server: serverOf(n) });
    return {
      prefix,
      idOf: userIdOf(prefix),
      worldOf,
      word,
      tag,
      wordMatches,
      tagMatches,
      hot: pair(1),
      ceilingWith: pair(2),
      ceilingWithout: pair(3),
      serviceJoiners,
      firstJoiner: OWNERS + 1,
      foldMs,
      snapshotMs,
    };
  } finally {
    await db.close();
  }
}
