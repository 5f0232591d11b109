import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { SUBMIT_SQL } from '../../src/modules/leaderboards/guarded.repository.js';
import { memberOf } from '../../src/modules/leaderboards/rank-key.js';
import { COLUMNS, ORDER } from '../../src/modules/leaderboards/records.repository.js';
import { timeOfKey } from '../../src/platform/cursor.js';
import { useLeanPipelines } from '../../src/platform/kv/lean-pipeline.js';
import { type DefinedScripts, defineScripts } from '../../src/platform/kv/redis-scripts.js';
import { valuesOf } from '../../src/platform/named-sql.js';
import { userIdOf } from '../chat/ceiling.js';
import { openBareDb } from '../datapath/bare-db.js';
import { latency } from '../worlds/harness.js';
import { anySubmitter, submittedScore } from './scores.js';

/**
 * The ceilings of the leaderboards benchmark: the Redis and PostgreSQL work of a records page or a
 * submission, done by a hand-written client at its best, without auth, validation, the board's
 * lookup, the rate limit or the index's ready check. It runs over `pg` (BARE_POOL_SIZE connections
 * to DATABASE_URL, named prepared statements, datapath/bare-db.ts) and one ioredis connection
 * whose commands of a tick share a write (auto-pipelining), as the service's do. The page's SELECT
 * is the service's (guarded.repository.ts) without the check of its board and period epoch; the
 * submission is the service's own statement; members are rank-key.ts's.
 * - top: ZRANGE of the first LIMIT + 1 members, then the first one's rank (ZLEXCOUNT) beside the
 *   page's rows (recordsOfUsers' SELECT).
 * - around: the page's members around the user's with their start in one script call (the
 *   service's Kv.zwindowOfField: the user's member from the hash of versions, ZCARD, ZLEXCOUNT
 *   and ZRANGE), then the page's rows.
 * - submit: the `best` upsert (with its note of the period) of a submitter's score into the
 *   copy's board, then ZADD of the record's member and its rank (ZLEXCOUNT) in one round trip.
 *   The ZADD leaves an improved record's old member in the set (no versions, no ZREM): less work
 *   than the service's index does.
 * BARE_LEADERBOARDS (JSON) is the BareJob. Two ways to run it:
 * - `clients` loops with no HTTP at all, a random submitter and score each: after an untimed
 *   second of the same loops (JIT, connections, prepared statements), prints `{"transactions": N,
 *   "seconds": S, "cores": C, "latency": L}` (C: this process's CPU; L: the operations'
 *   percentiles, worlds/harness.ts).
 * - `serve: true`: bare Fastify (no logger, hooks or plugins) answering `GET /page` and
 *   `POST /submit {score}` (the submitter's number in `x-submitter`) with the JSON fields the
 *   service answers, the same work over the HTTP load the service takes. Prints `{"port": N}`.
 */

export interface BareJob {
  operation: 'top' | 'around' | 'submit';
  clients: number;
  seconds: number;
  serve?: boolean;
  redisUrl: string;
  /** The ordered set's full key. */
  set: string;
  /** around: the full key of the set's hash of versions (rank-index.ts). */
  versions?: string;
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
  username: string;
  score: string;
  subscore: string;
  rank_score: string;
  rank_subscore: string;
  num_submissions: number;
  metadata: Record<string, unknown>;
  created_key: string;
  updated_key: string;
}

/** Records from `rank` on, as the service answers them (standings.ts's boardRecordView). */
interface Ranked {
  rank: number;
  rows: Row[];
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
// Auto-pipelined as the service's connection is, lean pipelines included (lean-pipeline.ts).
useLeanPipelines();
const redis = new Redis(job.redisUrl, { enableAutoPipelining: true });
defineScripts(redis);
const scripts = redis as unknown as DefinedScripts;
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

const operations = {
  async top(): Promise<Ranked> {
    const members = await redis.zrange(set, 0, limit);
    const page = members.slice(0, limit);
    const [before1, rows] = await Promise.all([before(page[0] as string), rowsOf(page.map(userOf))]);
    return { rank: before1 + 1, rows };
  },
  async around(): Promise<Ranked> {
    const [start, , members] = await scripts.fieldWindow(
      set,
      job.versions as string,
      job.userId as string,
      Math.floor((limit - 1) / 2),
      limit,
    );
    return { rank: start + 1, rows: await rowsOf(members.map(userOf)) };
  },
  async submit(
    n = anySubmitter(job.submitters as number),
    score = submittedScore(n, job.t0 as number),
  ): Promise<Ranked> {
    const [row] = await db.query<Row>(
      SUBMIT_BEST_SQL.text,
      valuesOf(SUBMIT_BEST_SQL, {
        ref: job.ref,
        periodStart,
        periodEnd: null,
        userId: idOf(n),
        score,
        subscore: 0,
        metadataJson: null,
        sign: -1,
        now: new Date(),
      }),
    );
    const member = memberOfRow(row as Row);
    const [, position] = await Promise.all([redis.zadd(set, 0, member), before(member)]);
    return { rank: position + 1, rows: [row as Row] };
  },
};

const recordView = (row: Row, rank: number) => ({
  leaderboard_id: job.ref,
  user_id: row.user_id,
  username: row.username,
  score: Number(row.score),
  subscore: Number(row.subscore),
  num_submissions: row.num_submissions,
  rank,
  metadata: row.metadata,
  created_at: timeOfKey(row.created_key),
  updated_at: timeOfKey(row.updated_key),
});

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

if (job.serve) {
  const app = Fastify({ logger: false });
  app.get('/page', async () => {
    const { rank, rows } = await operations[job.operation as 'top' | 'around']();
    return {
      items: rows.map((row, i) => recordView(row, rank + i)),
      next_cursor: null,
      period_started_at: job.periodStart,
      period_ended_at: null,
    };
  });
  app.post<{ Body: { score: number } }>('/submit', async (request) => {
    const { rank, rows } = await operations.submit(
      Number(request.headers['x-submitter']),
      request.body.score,
    );
    return recordView(rows[0] as Row, rank);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  console.log(JSON.stringify({ port: (app.server.address() as AddressInfo).port }));
  process.on('SIGTERM', () => process.exit(0));
} else {
  await loops(performance.now() + WARM_UP_MS);
  const [started, cpu] = [performance.now(), process.cpuUsage()];
  const samples = await loops(started + job.seconds * 1000);
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  const cores = (used.user + used.system) / 1e6 / seconds;
  console.log(JSON.stringify({ transactions: samples.length, seconds, cores, latency: latency(samples) }));
  process.exit(0);
}
