import { randomBytes } from 'node:crypto';
import type { TokenResponse } from '../../protocol/auth.js';
import { newId } from '../../src/platform/ids.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';

/** A tag no other test in the run uses: searches filtered by it see only the test's own worlds. */
export const uniqueTag = () => `t-${randomBytes(5).toString('hex')}`;

/** The discovery tests' REST calls and seeding, for the app of a test file. */
export function discoveryCalls(app: () => TestApp) {
  const { call, expectStatus } = callsAs(app);

  /** A world of `owner` with `visibility`, tagged; answers its id. */
  const taggedWorld = async (
    owner: TokenResponse,
    tags: string[],
    options: { visibility?: string; name?: string } = {},
  ): Promise<string> => {
    const { worldId } = await createWorld(app(), owner.access_token, {
      visibility: options.visibility ?? 'public',
      name: options.name ?? 'Discoverable',
    });
    await expectStatus(200, 'PUT', `/api/worlds/${worldId}/discovery`, owner, { tags });
    return worldId;
  };

  /**
   * Visits of a world as joins record them (a visit row, a first-visit row), `hoursAgo` before now,
   * by fresh users: what the fold counts.
   */
  const visits = async (worldId: string, count: number, hoursAgo = 0) => {
    const at = new Date(Date.now() - hoursAgo * 3600_000);
    for (let i = 0; i < count; i += 1) {
      const { user } = await registerUser(app());
      await queryRows(
        app().db,
        `with visit as (insert into world_visits (id, world_id, user_id, visited_at) values (?, ?, ?, ?))
         insert into world_visitors (world_id, user_id, first_visited_at) values (?, ?, ?) on conflict do nothing`,
        [newId(), worldId, user.id, at, worldId, user.id, at],
      );
    }
  };

  /** Folds the visits and takes a new ranking snapshot, as the jobs do every interval. */
  const refresh = async () => {
    await app().modules.discovery.foldVisits();
    await app().modules.discovery.rankNow();
  };

  /** Every page of a search, following the cursor; answers the world ids in order. */
  const searchAll = async (user: TokenResponse, query: string, limit = 2, between?: () => Promise<void>) => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/api/discovery/worlds?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
      const page: { items: { world_id: string }[]; next_cursor: string | null } = (
        await expectStatus(200, 'GET', url, user)
      ).json();
      ids.push(...page.items.map((item) => item.world_id));
      cursor = page.next_cursor;
      if (cursor) await between?.();
    } while (cursor);
    return ids;
  };

  return { call, expectStatus, taggedWorld, visits, refresh, searchAll };
}
