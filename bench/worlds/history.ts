import { type Api, chunkPayload, type Latency, latency, progress, type Sql } from './harness.js';

/**
 * Measurement 5: revision history pages of a world holding 1,000,000 revisions (10,000 chunks of
 * one room, 100 revisions each, every tenth a tombstone), seeded with SQL in 10 statements.
 */

export const HISTORY_REVISIONS = 1_000_000;
const CHUNKS = 10_000;
const STEPS = 10;
const FIRST_PAGES = 200;
/** Requests before the newest-page figure: the first ones after a (re)start run cold code. */
const WARM_UP = 50;
const JUMPS = 1000;

export interface HistorySeed {
  revisions: number;
  seconds: number;
  /** Why seeding stopped short of HISTORY_REVISIONS. */
  cut?: string;
}

export async function seedHistory(
  sql: Sql,
  ids: { worldId: string; roomId: string; authorId: string },
  budgetSeconds: number,
): Promise<HistorySeed> {
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const { worldId, roomId, authorId } = ids;
  await sql.query(
    `insert into chunks (room_id, world_id, x, y, z, revision)
     select $1, $2, g % 100, g / 100, 0, 0 from generate_series(0, ${CHUNKS - 1}) g`,
    [roomId, worldId],
  );
  const perChunk = HISTORY_REVISIONS / CHUNKS / STEPS;
  let revisions = 0;
  let cut: string | undefined;
  for (let step = 0; step < STEPS; step++) {
    // Revisions perChunk*step+1 .. perChunk*(step+1) of every chunk; k % 10 = 5 is a tombstone.
    await sql.query(
      `insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone, author_id)
       select nextval('chunk_revision_ids'), c.id, c.world_id, c.room_id, c.x, c.y, c.z,
         case when k % 10 = 5 then null else $2::bytea end, k % 10 = 5, $3
       from generate_series($4::int, $5::int) k cross join chunks c where c.room_id = $1 order by k, c.id`,
      [roomId, Buffer.from(chunkPayload(100)), authorId, perChunk * step + 1, perChunk * (step + 1)],
    );
    revisions += perChunk * CHUNKS;
    const projected = (elapsed() * STEPS) / (step + 1);
    progress(`history: ${revisions.toLocaleString('en-US')} revisions in ${elapsed().toFixed(1)} s`);
    if (step < STEPS - 1 && projected > budgetSeconds) {
      cut = `seeding ${HISTORY_REVISIONS.toLocaleString('en-US')} revisions was projected at ${projected.toFixed(0)} s, over the ${budgetSeconds} s budget`;
      break;
    }
  }
  await sql.query(
    `update chunks c set revision = m.id from (
       select chunk_id, max(id) as id from chunk_revisions where room_id = $1 group by chunk_id
     ) m where m.chunk_id = c.id`,
    [roomId],
  );
  await sql.query(
    // stored_bytes counts every kept revision's payload, as the service keeps it (docs/worlds.md).
    `update worlds set content_revision = (select max(id) from chunk_revisions where world_id = $1),
       stored_bytes = (select coalesce(sum(octet_length(payload)), 0) from chunk_revisions where world_id = $1)
     where id = $1`,
    [worldId],
  );
  await sql.query('vacuum analyze chunks');
  await sql.query('vacuum analyze chunk_revisions');
  progress(`history: heads, content revision and vacuum analyze done at ${elapsed().toFixed(1)} s`);
  return { revisions, seconds: elapsed(), ...(cut ? { cut } : {}) };
}

export interface HistoryResults {
  firstPage: Latency;
  walk: Latency & { pages: number; items: number; seconds: number };
  jumps: Latency;
  problems: string[];
}

interface Page {
  items: { revision: number }[];
  next_cursor: string | null;
}

/** The newest page again and again, every page in turn (limit 100), then pages at cursors collected on the way. */
export async function measureHistory(api: Api, worldId: string, seeded: number): Promise<HistoryResults> {
  const problems: string[] = [];
  const page = async (query: string, samples: number[]) => {
    const started = performance.now();
    const reply = await api.call<Page>('GET', `/api/worlds/${worldId}/revisions?${query}`);
    samples.push(performance.now() - started);
    if (reply.status !== 200) throw new Error(`revisions?${query} answered ${reply.status}: ${reply.body}`);
    return reply.body;
  };
  const first: number[] = [];
  for (let i = 0; i < WARM_UP; i++) await page('limit=50', []);
  for (let i = 0; i < FIRST_PAGES; i++) await page('limit=50', first);
  const walk: number[] = [];
  const cursors: string[] = [];
  const walkStarted = performance.now();
  let items = 0;
  let last = Number.POSITIVE_INFINITY;
  for (let cursor: string | null = ''; cursor !== null; ) {
    const body: Page = await page(`limit=100${cursor ? `&cursor=${cursor}` : ''}`, walk);
    for (const item of body.items) {
      if (item.revision >= last && problems.length < 5)
        problems.push(`the walk went from revision ${last} to ${item.revision}`);
      last = item.revision;
    }
    items += body.items.length;
    cursor = body.next_cursor;
    if (cursor) cursors.push(cursor);
    if (walk.length % 2000 === 0) progress(`history: walked ${walk.length} pages (${items} revisions)`);
  }
  const seconds = (performance.now() - walkStarted) / 1000;
  if (items !== seeded) problems.push(`the walk listed ${items} revisions, ${seeded} were seeded`);
  const jumps: number[] = [];
  for (let i = 0; i < JUMPS; i++)
    await page(`limit=50&cursor=${cursors[Math.floor(Math.random() * cursors.length)]}`, jumps);
  return {
    firstPage: latency(first),
    walk: { ...latency(walk), pages: walk.length, items, seconds },
    jumps: latency(jumps),
    problems,
  };
}

/** history.repository.ts's statement for a world's page, copied: the service plans it for its actual values. */
const BY_WORLD = `select id, room_id, x, y, z, tombstone, coalesce(octet_length(payload), 0) as size, author_id, created_at
  from chunk_revisions where world_id = $1 and id < coalesce($2::bigint, 9223372036854775807)
  and id > coalesce($3::bigint, 0) order by id desc limit $4`;

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

/** EXPLAIN ANALYZE of the page statement (Postgres), for the newest page and a cursor halfway down. */
export async function explainPages(sql: Sql, worldId: string): Promise<{ newest: string; deep: string }> {
  const [top] = await sql.query<{ max: string }>(
    'select max(id) as max from chunk_revisions where world_id = $1',
    [worldId],
  );
  const explain = async (before: number) => {
    type Explained = { 'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number }] };
    const [row] = (await sql.query<Explained>(`explain (analyze, buffers, format json) ${BY_WORLD}`, [
      worldId,
      before,
      null,
      51,
    ])) as [Explained];
    const [{ Plan, 'Execution Time': ms }] = row['QUERY PLAN'];
    const scan = Plan.Plans?.[0] ?? Plan;
    const blocks = (scan['Shared Hit Blocks'] ?? 0) + (scan['Shared Read Blocks'] ?? 0);
    return `${scan['Node Type']} (${scan['Scan Direction'] ?? 'n/a'}) using ${scan['Index Name']}, ${scan['Rows Removed by Filter'] ?? 0} rows removed by the world filter, ${blocks} buffers, ${ms.toFixed(2)} ms`;
  };
  // The service bounds the newest page at the world's content revision (history.service.ts).
  return {
    newest: await explain(Number(top?.max) + 1),
    deep: await explain(Number(top?.max) - HISTORY_REVISIONS / 2),
  };
}
