import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createBoard, leaderboardCalls } from './leaderboards.js';

/**
 * A node keeps a copy of each board it read (a board never changes), so its pages and submissions
 * run no statement for the board: a board deleted or made again through another node must still
 * be answered as that node answers it.
 */
describe('boards deleted through another node', () => {
  let cluster: TestCluster;
  let first: App;
  let second: App;
  let admin: TokenResponse;
  let alice: TokenResponse;
  let boards = 0;
  const nextId = () => `copied-${process.pid}-${++boards}`;
  beforeAll(async () => {
    cluster = await buildTestCluster(2, { LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: 1000 });
    [first, second] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    admin = await registerWithRole(first, 'admin');
    alice = await registerUser(first);
  });
  afterAll(async () => {
    await cluster?.close();
  });

  const onFirst = leaderboardCalls(() => first);
  const onSecond = leaderboardCalls(() => second);
  const refOf = async (id: string) =>
    (await queryRows<{ ref: string }>(first.db, 'select ref from leaderboards where id = ?', [id]))[0]?.ref;
  const rowsOf = async (ref: string) =>
    (
      await queryRows<{ n: string }>(
        first.db,
        `select (select count(*) from leaderboard_records where standings_ref = ?)
           + (select count(*) from leaderboard_periods where standings_ref = ?) as n`,
        [ref, ref],
      )
    )[0]?.n;

  it('answers 404 to the pages, records and submissions of the node that copied it, writing nothing', async () => {
    const id = await createBoard(first, admin.access_token, { id: nextId() });
    const records = `/api/leaderboards/${id}/records`;
    expect((await onFirst('POST', records, alice.access_token, { score: 5 })).status).toBe(200);
    expect((await onFirst('GET', records, alice.access_token)).body.items).toHaveLength(1);
    const ref = (await refOf(id)) as string;

    expect((await onSecond('DELETE', `/api/admin/leaderboards/${id}`, admin.access_token)).status).toBe(204);

    // Answered as the other node answers, which reads the board's row.
    const asSecond = async (method: 'GET' | 'POST', url: string, body?: object) => {
      const answer = await onSecond(method, url, alice.access_token, body);
      expect([answer.status, answer.body.code]).toEqual([404, 'NOT_FOUND']);
      return [url, answer.status, answer.body];
    };
    for (const url of [
      records,
      `${records}?around=me`,
      `${records}?user_ids=${alice.user.id}`,
      `${records}?friends=true`,
      `${records}?period=previous`,
      `${records}/${alice.user.id}`,
    ]) {
      const answer = await onFirst('GET', url, alice.access_token);
      expect([url, answer.status, answer.body]).toEqual(await asSecond('GET', url));
    }
    const submitted = await onFirst('POST', records, alice.access_token, { score: 9 });
    expect([records, submitted.status, submitted.body]).toEqual(
      await asSecond('POST', records, { score: 9 }),
    );
    expect(Number(await rowsOf(ref))).toBe(0);
  });

  it('answers 404, not 403, to a client submitting to an authoritative board deleted through another node', async () => {
    const id = await createBoard(first, admin.access_token, { id: nextId(), authoritative: true });
    const records = `/api/leaderboards/${id}/records`;
    expect((await onFirst('POST', records, alice.access_token, { score: 1 })).status).toBe(403);
    expect((await onSecond('DELETE', `/api/admin/leaderboards/${id}`, admin.access_token)).status).toBe(204);
    expect((await onFirst('POST', records, alice.access_token, { score: 1 })).status).toBe(404);
  });

  it('answers the board made again under the same id, empty and with its own settings, on the node that copied the old one', async () => {
    const id = await createBoard(first, admin.access_token, { id: nextId() });
    const records = `/api/leaderboards/${id}/records`;
    expect((await onFirst('POST', records, alice.access_token, { score: 50 })).status).toBe(200);
    expect((await onSecond('DELETE', `/api/admin/leaderboards/${id}`, admin.access_token)).status).toBe(204);
    await createBoard(second, admin.access_token, { id, sort: 'asc', operator: 'set' });

    expect((await onFirst('GET', records, alice.access_token)).body.items).toEqual([]);
    // The new board's settings apply: `set` replaces, and the lower score ranks first.
    expect((await onFirst('POST', records, alice.access_token, { score: 70 })).body).toMatchObject({
      score: 70,
      rank: 1,
    });
    const replaced = await onFirst('POST', records, alice.access_token, { score: 60 });
    expect(replaced.body).toMatchObject({ score: 60, num_submissions: 2, rank: 1 });
    const seen = await onSecond('GET', records, alice.access_token);
    expect(seen.body.items.map((r: { score: number }) => r.score)).toEqual([60]);
  });
});
