import { DISCOVERY_COLUMNS } from '../../src/modules/discovery/discovery.repository.js';
import { timeKeySql } from '../../src/platform/cursor.js';
import { pgbenchSafeTimeKey } from '../chat/ceiling.js';
import { restContender } from '../realtime/rest-load.js';
import type { Atrium } from '../realtime/servers.js';
import { type Latency, latency } from '../worlds/harness.js';
import type { DiscoverySeed } from './seed.js';

/**
 * Measurement 1: first pages of `GET /api/discovery/worlds` (limit 50), one query string per
 * search, beside pgbench running the statements DiscoveryService.search runs for it
 * (src/modules/discovery/discovery-search.repository.ts, copied): newestPage's SELECT for `new`;
 * latestSnapshot's SELECT, then rankedPage's with that snapshot, for popular and trending. The
 * filters are spelled as filtersOf spells them, and the first page's null keys are bound as
 * parameters that are null (`nullif(:none, 'x')`), as the service binds them.
 */

export const LIMIT = 50;

export interface Search {
  name: string;
  query: string;
  /** The pgbench script and its variables. */
  script: string;
  variables: Record<string, string>;
}

const NONE = { none: 'x', limit: String(LIMIT + 1) };
/** pgbench reads `:MI` in a literal as a variable: each time key is split where it would. */
const COLUMNS = pgbenchSafeTimeKey(DISCOVERY_COLUMNS);
const SNAPSHOT_KEY = pgbenchSafeTimeKey(timeKeySql('max(snapshot_at)'));
const none = (type: string) => `nullif(:none, 'x')::${type}`;

/** As filtersOf writes them: a ranked page tests the snapshot's tags. */
function filters(q: boolean, tags: boolean, ranked = false): string {
  return [
    'd.is_public',
    ...(q ? ["d.search @@ websearch_to_tsquery('simple', :q)"] : []),
    ...(tags ? [`${ranked ? 'r' : 'd'}.tags @> :tags::text[]`] : []),
  ].join(' and ');
}

function newest(q: boolean, tags: boolean): string {
  return `select ${COLUMNS} from world_discovery d
     where ${filters(q, tags)}
       and (d.world_created_at, d.world_id) < (coalesce(${none('timestamptz')}, 'infinity'), coalesce(${none('uuid')}, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
     order by d.world_created_at desc, d.world_id desc
     limit :limit`;
}

function ranked(sort: 'popular' | 'trending', q: boolean, tags: boolean): string {
  const score = sort === 'popular' ? 'r.popular' : 'r.trending';
  return `select ${SNAPSHOT_KEY} as key from discovery_ranks \\gset
select ${COLUMNS}, ${score} as score from discovery_ranks r
     join world_discovery d on d.world_id = r.world_id
     where r.snapshot_at = :key and ${filters(q, tags, true)}
       and (${score}, r.world_created_at, r.world_id)
         < (coalesce(${none('bigint')}, 9223372036854775807), coalesce(${none('timestamptz')}, 'infinity'), coalesce(${none('uuid')}, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
     order by ${score} desc, r.world_created_at desc, r.world_id desc
     limit :limit`;
}

export function searches(seed: DiscoverySeed): Search[] {
  const q = { q: seed.word };
  const tags = { tags: `{${seed.tag}}` };
  const search = (name: string, query: string, sql: string, variables: Record<string, string>) => ({
    name,
    query,
    script: sql,
    variables: { ...NONE, ...variables },
  });
  return [
    search(`q=${seed.word}, sort=new`, `q=${seed.word}&sort=new`, newest(true, false), q),
    search(`tag=${seed.tag} (popular)`, `tag=${seed.tag}`, ranked('popular', false, true), tags),
    search('sort=new', 'sort=new', newest(false, false), {}),
    search('sort=popular', 'sort=popular', ranked('popular', false, false), {}),
    search('sort=trending', 'sort=trending', ranked('trending', false, false), {}),
    search(
      `q=${seed.word}, tag=${seed.tag}, sort=popular`,
      `q=${seed.word}&tag=${seed.tag}&sort=popular`,
      ranked('popular', true, true),
      { ...q, ...tags },
    ),
  ];
}

const pathOf = (search: Search) => `/api/discovery/worlds?${search.query}&limit=${LIMIT}`;

/** One request by hand first: a full page with a next cursor, or the figures mean nothing. */
export async function checkSearch(httpPort: number, token: string, search: Search): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${httpPort}${pathOf(search)}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const page = (await response.json()) as { items?: unknown[]; next_cursor?: string | null };
  if (response.status !== 200 || page.items?.length !== LIMIT || !page.next_cursor)
    throw new Error(`${pathOf(search)} answered ${response.status}: ${JSON.stringify(page).slice(0, 300)}`);
}

export const searchRequests = (atrium: Atrium, token: string, search: Search) =>
  restContender(
    `GET ${search.name}`,
    `http://127.0.0.1:${atrium.httpPort}${pathOf(search)}`,
    atrium.pid,
    { authorization: `Bearer ${token}` },
    { method: 'GET' },
  );

/** The page's latency unloaded: one client, one request at a time, for `seconds`. */
export async function searchLatency(
  httpPort: number,
  token: string,
  search: Search,
  seconds: number,
): Promise<Latency> {
  const samples: number[] = [];
  const url = `http://127.0.0.1:${httpPort}${pathOf(search)}`;
  const headers = { authorization: `Bearer ${token}` };
  for (const end = performance.now() + seconds * 1000; performance.now() < end; ) {
    const started = performance.now();
    const response = await fetch(url, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
    samples.push(performance.now() - started);
  }
  return latency(samples);
}

/** A pgbench script's last statement with its variables spelled in as literals, for EXPLAIN. */
export function spelled(script: string, values: Record<string, string>): string {
  const statement = script.split('\\gset\n').at(-1) as string;
  return statement.replace(/(?<!:):([a-z]\w*)/g, (whole, name: string) =>
    values[name] === undefined ? whole : `'${values[name]}'`,
  );
}
