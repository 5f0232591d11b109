import { MEMBER_COLUMNS } from '../../src/modules/groups/groups.repository.js';
import { pgbenchSafeTimeKey, pgbenchUuid } from '../chat/ceiling.js';
import { restContender } from '../realtime/rest-load.js';
import type { Atrium } from '../realtime/servers.js';
import { type Latency, latency } from '../worlds/harness.js';
import { joinedAtSql, MEMBERS, PAGE } from './seed.js';

/**
 * Measurement 1: roster pages (`GET /api/groups/{id}/members?limit=100`) of the 10,000-member
 * group, each request a random one of its 100 pages by the cursor the service gave out for it,
 * beside pgbench running rosterPage's SELECT (src/modules/groups/group-lists.repository.ts, copied
 * with its username subselect) for a random page, its keyset spelled from the page's number.
 */

const PAGES = MEMBERS / PAGE;
const pagePath = (groupId: string, cursor: string | undefined) =>
  `/api/groups/${groupId}/members?limit=${PAGE}${cursor ? `&cursor=${cursor}` : ''}`;

/** Walks the roster once, page by page: the cursor of every page (none for the first), checked whole. */
export async function rosterCursors(
  httpPort: number,
  token: string,
  groupId: string,
  idOf: (n: number) => string,
): Promise<(string | undefined)[]> {
  const cursors: (string | undefined)[] = [undefined];
  let seen = 0;
  for (;;) {
    const response = await fetch(`http://127.0.0.1:${httpPort}${pagePath(groupId, cursors.at(-1))}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const page = (await response.json()) as { items: { user_id: string }[]; next_cursor: string | null };
    if (response.status !== 200 || page.items[0]?.user_id !== idOf(seen + 1))
      throw new Error(`roster page ${cursors.length} answered ${response.status} or out of order`);
    seen += page.items.length;
    if (!page.next_cursor) break;
    cursors.push(page.next_cursor);
  }
  if (seen !== MEMBERS || cursors.length !== PAGES)
    throw new Error(`the roster walk saw ${seen} members in ${cursors.length} pages`);
  return cursors;
}

export function rosterRequests(atrium: Atrium, groupId: string, token: string, cursors: readonly unknown[]) {
  return restContender(
    `GET members?limit=${PAGE}`,
    `http://127.0.0.1:${atrium.httpPort}${pagePath(groupId, undefined)}`,
    atrium.pid,
    { authorization: `Bearer ${token}` },
    {
      method: 'GET',
      setup: (request) => ({
        ...request,
        path: pagePath(groupId, cursors[Math.floor(Math.random() * cursors.length)] as string | undefined),
      }),
    },
  );
}

/**
 * The page's latency unloaded: one client, one request at a time, random pages, for `seconds`
 * (the rounds' 50 connections measure throughput, and their p99 is mostly the queue).
 */
export async function rosterLatency(
  httpPort: number,
  token: string,
  groupId: string,
  cursors: readonly (string | undefined)[],
  seconds: number,
): Promise<Latency> {
  const samples: number[] = [];
  const headers = { authorization: `Bearer ${token}` };
  for (const end = performance.now() + seconds * 1000; performance.now() < end; ) {
    const cursor = cursors[Math.floor(Math.random() * cursors.length)];
    const started = performance.now();
    const response = await fetch(`http://127.0.0.1:${httpPort}${pagePath(groupId, cursor)}`, { headers });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`a roster page answered ${response.status}`);
    samples.push(performance.now() - started);
  }
  return latency(samples);
}

/** rosterPage's statement for page p (0 … 99): the first page binds no key, page p the key of member 100p. */
export function rosterPageScript(prefix: string): string {
  const after = (sql: string, type: string) => `coalesce((case when :p > 0 then ${sql} end)::${type}`;
  return pgbenchSafeTimeKey(`\\set p random(0, ${PAGES - 1})
\\set last :p * ${PAGE}
select ${MEMBER_COLUMNS} from group_members
     where group_id = :g::uuid
       and role >= coalesce(null::group_role, 'owner') and role <= coalesce(null::group_role, 'member')
       and (role, joined_at, user_id) > (${after("'member'", 'group_role')}, 'owner'), ${after(joinedAtSql(':last::int'), 'timestamptz')}, '-infinity'),
                                         ${after(pgbenchUuid(prefix, 'last'), 'uuid')}, '00000000-0000-0000-0000-000000000000'))
     order by group_members.role, joined_at, user_id
     limit ${PAGE + 1}`);
}
