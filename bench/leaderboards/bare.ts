import { Redis } from 'ioredis';
import { SUBMIT_SQL } from '../../src/modules/leaderboards/guarded.repository.js';
import { memberOf } from '../../src/modules/leaderboards/rank-key.js';
import { COLUMNS, ORDER } from '../../src/modules/leaderboards/records.repository.js';
import { timeOfKey } from '../../src/platform/cursor.js';
import { valuesOf } from '../../src/platform/named-sql.js';
import { userIdOf } from '../chat/ceiling.js';
import { openBareDb } from '../datapath/bare-db.js';
import { latency } from '../worlds/harness.js';
import { anySubmitter, submittedScore } from './scores.js';

/**
 * The ceiling of the leaderboards benchmark: the Redis and PostgreSQL work of a records page or a
 * submission, done by a hand-written client at its best, without HTTP, auth, validation, the
 * board's lookup, the rate limit or the index's ready check. `clients` loops at once over `pg`
 * (BARE_POOL_SIZE connections to DATABASE_URL, named prepared statements, datapath/bare-db.ts) and
 * one ioredis connection whose commands of a tick share a write (auto-pipelining), as the
 * service's do. The page's SELECT is the service's (guarded.repository.ts) without the check of
 * its board and period epoch; the submission is the service's own statement; members are
 * rank-key.ts's.
 * - top: ZRANGE of the first LIMIT + 1 members, then the first one's rank (ZLEXCOUNT) beside the
 *   page's rows (recordsOfUsers' SELECT).
 * - around: the user's record (the same SELECT), its rank and the count (ZLEXCOUNT, ZCARD), the
 *   ZRANGE of the page as StandingsReader.around places it, then the page's rows.
 * - submit: the `best` upsert (with its note of the period) of a random submitter's score into
 *   the copy's board, then ZADD of the record's member and its rank (ZLEXCOUNT) in one round trip.
 *   The ZADD leaves an improved record's old member in the set (no versions, no ZREM): less work
 *   than the service's index does.
 * BARE_LEADERBOARDS (JSON) is the BareJob. After an untimed second of the same loops (JIT,
 * connections, prepared statements), prints `{"transactions": N, "seconds": S, "cores": C,
 * "latency": L}` (C: this process's CPU; L: the operations' percentiles, worlds/harness.ts).
 */

export interface BareJob {
  operation: 'top' | 'around' | 'submit';
  clients: number;
  seconds: number;
  redisUrl: string;
  /** The ordered set's full key. */
  set: string;
  ref: string;
  periodStart: string;
  limit: number;
  /** around: the user. */
  userId?: string;
  /** submit: users 1..submitters of the run's `prefix`, scores from `t0`. */
  prefix?: string;
  submitters?: number;
  t0?: number;
}

interface Row {
  user_id: string;
  rank_score: string;
  rank_subscore: string;
  updated_key: string;
}

const BY_USERS_SQL = `
  select ${COLUMNS} from leaderboard_records r
  where r.standings_ref = $1 and r.period_start = $2 and r.user_id = any($3::uuid[])
  order by ${ORDER}`;
/** The service's own `best` statement (guarded.repository.ts): the copy is a board too. */
const SUBMIT_BEST_SQL = SUBMIT_SQL.best;
const WARM_UP_MS = 1000;

const job = JSON.parse(process.env.BARE_LEADERBOARDS as string) as BareJob;
const db = await openBareDb();
const redis = new Redis(job.redisUrl, { enableAutoPipelining: true });
const { set, limit } = job;
const periodStart = new Date(job.periodStart);
const userOf = (member: string) => member.slice(-36);
const rowsOf = (userIds: string[]) => db.query<Row>(BY_USERS_SQL, [job.ref, periodStart, userIds]);
const memberOfRow = (row: Row) =>
  memberOf({
    rankScore: Number(row.rank_score),
    rankSubscore: Number(row.rank_subscore),
    updatedAt: Date.parse(timeOfKey(row.updated_key)),
    userId: row.user_id,
  });
const before = (member: string) => redis.zlexcount(set, '-', `(${member}`);
const idOf = userIdOf(job.prefix ?? '');

const operations: Record<BareJob['operation'], () => Promise<unknown>> = {
  async top() {
    const members = await redis.zrange(set, 0, limit);
    const page = members.slice(0, limit);
    return Promise.all([before(page[0] as string), rowsOf(page.map(userOf))]);
  },
  async around() {
    const [me] = await rowsOf([job.userId as string]);
    const [position, total] = await Promise.all([before(memberOfRow(me as Row)), redis.zcard(set)]);
    const start = Math.max(0, Math.min(position - Math.floor((limit - 1) / 2), total - limit));
    return rowsOf((await redis.zrange(set, start, start + limit - 1)).map(userOf));
  },
  async submit() {
    const n = anySubmitter(job.submitters as number);
    const now = new Date();
    const [row] = await db.query<Row>(
      SUBMIT_BEST_SQL.text,
      valuesOf(SUBMIT_BEST_SQL, {
        ref: job.ref,
        periodStart,
        periodEnd: null,
        userId: idOf(n),
        score: submittedScore(n, job.t0 as number),
        subscore: 0,
        metadataJson: null,
        sign: -1,
        now,
      }),
    );
    const member = memberOfRow(row as Row);
    return Promise.all([redis.zadd(set, 0, member), before(member)]);
  },
};

/** Runs `job.clients` loops until `until`; the durations of their operations in ms. */
async function loops(until: number): Promise<number[]> {
  const samples: number[] = [];
  const loop = async () => {
    while (performance.now() < until) {
      const started = performance.now();
      await operations[job.operation]();
      samples.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: job.clients }, loop));
  return samples;
}

await loops(performance.now() + WARM_UP_MS);
const [started, cpu] = [performance.now(), process.cpuUsage()];
const samples = await loops(started + job.seconds * 1000);
const used = process.cpuUsage(cpu);
const seconds = (performance.now() - started) / 1000;
const cores = (used.user + used.system) / 1e6 / seconds;
console.log(JSON.stringify({ transactions: samples.length, seconds, cores, latency: latency(samples) }));
process.exit(0);
