import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { utcOf } from '../../src/modules/console/pages/tournaments.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createBoard, leaderboardCalls } from '../leaderboards/leaderboards.js';
import { ConsoleClient } from './console-client.js';

const HOUR = 3600_000;
/** A time as a datetime-local input holds it, in UTC: `2030-05-01T12:30`. */
const inputTime = (ms: number) => new Date(ms).toISOString().slice(0, 16);

/** The standings rows of a console page: rank, user, score, subscore and submissions as shown. */
function standingsOf(page: string) {
  return [
    ...page.matchAll(
      /<tr><td class="num">(\d+)<\/td><td><a href="\/console\/users\/([^"]+)"><code>[^<]*<\/code><\/a><\/td><td class="num">(-?\d+)<\/td>\s*<td class="num">(-?\d+)<\/td><td class="num">(\d+)<\/td>/g,
    ),
  ].map(([, rank, userId, score, subscore, submissions]) => ({
    rank: Number(rank),
    user_id: userId,
    score: Number(score),
    subscore: Number(subscore),
    submissions: Number(submissions),
  }));
}

/** The text of the flash a page shows after a form, or undefined without one. */
const flashOf = (page: string) => /class="flash (?:notice|error)" role="\w+">([^<]*)</.exec(page)?.[1];

/**
 * The console's leaderboards and tournaments pages over inject: lists with their creation forms,
 * standings with exact ranks, a cheater's record deleted for a reason, deletions once confirmed,
 * and the API's refusals shown on the page.
 */
describe('the console’s leaderboards and tournaments pages', () => {
  const app = useTestApp({ LEADERBOARD_SUBMIT_RATE_LIMIT_COUNT: 1000 });
  const call = leaderboardCalls(app);
  let admin: TokenResponse;
  let browser: ConsoleClient;
  let made = 0;
  const unique = (prefix: string) => `${prefix}-${++made}`;
  beforeAll(async () => {
    admin = await registerWithRole(app(), 'admin');
    browser = await new ConsoleClient(app()).signedIn(admin.user.username);
  });
  const submit = async (path: string, user: TokenResponse, body: object) => {
    const answer = await call('POST', path, user.access_token, body);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  };
  const players = (count: number) => Promise.all(Array.from({ length: count }, () => registerUser(app())));

  describe('leaderboards', () => {
    const board = (settings: Record<string, unknown> = {}) =>
      createBoard(app(), admin.access_token, { id: unique('board'), ...settings });
    const boardNow = (id: string) => call('GET', `/api/leaderboards/${id}`, admin.access_token);

    it('creates boards through the page’s form with their settings, lists them and links each to its standings', async () => {
      const page = await browser.get('/console/leaderboards');
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('action="/console/leaderboards/create"');
      expect(page.body).toContain(`name="_csrf" value="${browser.csrf}"`);
      const [weekly, forever] = [unique('weekly'), unique('forever')];
      const created = await browser.post('/console/leaderboards/create', {
        id: weekly,
        sort: 'asc',
        operator: 'incr',
        reset_schedule: '0 0 * * 1',
        authoritative: 'yes',
      });
      expect([created.statusCode, created.headers.location]).toEqual([303, '/console/leaderboards']);
      await browser.post('/console/leaderboards/create', {
        id: forever,
        sort: 'desc',
        operator: 'best',
        reset_schedule: '',
      });
      expect((await boardNow(weekly)).body).toMatchObject({
        sort: 'asc',
        operator: 'incr',
        reset_schedule: '0 0 * * 1',
        authoritative: true,
      });
      expect((await boardNow(forever)).body).toMatchObject({
        sort: 'desc',
        operator: 'best',
        reset_schedule: null,
        authoritative: false,
      });
      const list = (await browser.get('/console/leaderboards')).body;
      expect(flashOf(list)).toBe(`Board “${forever}” created.`);
      expect(list).toContain(`href="/console/leaderboards/${weekly}"`);
      expect(list).toContain(`href="/console/leaderboards/${forever}"`);
      expect(list).toContain('<code>0 0 * * 1</code>');
    });

    it('shows a bad id, a schedule with a day name and an id in use as the API’s refusals, and creates nothing more', async () => {
      const taken = await board();
      const before = (await call('GET', '/api/leaderboards?limit=100', admin.access_token)).body.items.length;
      const refusal = async (fields: Record<string, string>) => {
        const answer = await browser.post('/console/leaderboards/create', fields);
        expect([answer.statusCode, answer.headers.location]).toEqual([303, '/console/leaderboards']);
        const page = await browser.get('/console/leaderboards');
        expect(page.statusCode).toBe(200);
        expect(page.body).toContain('class="flash error" role="alert"');
        return flashOf(page.body);
      };
      expect(await refusal({ id: 'Bad Id!' })).toMatch(
        /^Unprocessable Content: .*\(body\.id must be 1-64 of a-z/,
      );
      expect(await refusal({ id: unique('mondays'), reset_schedule: '0 0 * * MON' })).toMatch(
        /^Unprocessable Content: .*\(reset_schedule &quot;MON&quot;: names such as MON or JAN are not supported/,
      );
      expect(await refusal({ id: taken })).toMatch(/^Conflict: /);
      expect((await call('GET', '/api/leaderboards?limit=100', admin.access_token)).body.items).toHaveLength(
        before,
      );
    });

    it('shows the current period’s standings with the exact ranks of records submitted through the API', async () => {
      const id = await board({ reset_schedule: '0 0 1 1 *' });
      const [alice, bob, carol, dave] = await players(4);
      if (!alice || !bob || !carol || !dave) throw new Error('four players');
      const path = `/api/leaderboards/${id}/records`;
      await submit(path, alice, { score: 50, subscore: 1 });
      await submit(path, bob, { score: 50, subscore: 7 });
      await submit(path, carol, { score: 20 });
      await submit(path, carol, { score: 90 });
      await submit(path, dave, { score: -3 });
      const page = await browser.get(`/console/leaderboards/${id}`);
      expect(page.statusCode).toBe(200);
      expect(standingsOf(page.body)).toEqual([
        { rank: 1, user_id: carol.user.id, score: 90, subscore: 0, submissions: 2 },
        { rank: 2, user_id: bob.user.id, score: 50, subscore: 7, submissions: 1 },
        { rank: 3, user_id: alice.user.id, score: 50, subscore: 1, submissions: 1 },
        { rank: 4, user_id: dave.user.id, score: -3, subscore: 0, submissions: 1 },
      ]);
      expect(page.body).toContain('Standings: the current period');
      expect(page.body).toContain(`Delete the record of ${bob.user.username}`);
      expect(page.body).toContain('<code>0 0 1 1 *</code> (UTC)');
      expect(page.body).toContain(`href="/console/leaderboards/${id}?period=previous"`);
    });

    it('shows the previous period, empty before the first reset, without record deletion forms', async () => {
      const id = await board({ reset_schedule: '0 0 1 1 *' });
      const [alice] = await players(1);
      if (!alice) throw new Error('a player');
      await submit(`/api/leaderboards/${id}/records`, alice, { score: 5 });
      const page = await browser.get(`/console/leaderboards/${id}?period=previous`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('Standings: the previous period');
      expect(page.body).toContain('No previous period yet: the board has not reset.');
      expect(standingsOf(page.body)).toEqual([]);
      expect(page.body).not.toContain('Delete record</button>');
      expect(page.body).toContain(`<a href="/console/leaderboards/${id}">The current period</a>`);
    });

    it('pages the standings 25 records at a time with the API’s cursor, the ranks going on', async () => {
      const id = await board();
      const crowd = await players(26);
      for (const [i, player] of crowd.entries())
        await submit(`/api/leaderboards/${id}/records`, player, { score: 1000 - i });
      const first = (await browser.get(`/console/leaderboards/${id}`)).body;
      expect(standingsOf(first).map((row) => row.rank)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      const next = /<a href="([^"]+)" rel="next">Next page<\/a>/.exec(first)?.[1];
      expect(next).toMatch(new RegExp(`^/console/leaderboards/${id}\\?cursor=`));
      const second = await browser.get((next as string).replaceAll('&amp;', '&'));
      expect(standingsOf(second.body)).toEqual([
        expect.objectContaining({ rank: 26, user_id: crowd[25]?.user.id, score: 975 }),
      ]);
      expect(second.body).not.toContain('rel="next"');
    });

    it('deletes a cheater’s record through its form with the reason: the others move up, and the audit log has the entry', async () => {
      const id = await board();
      const [cheater, honest, slower] = await players(3);
      if (!cheater || !honest || !slower) throw new Error('three players');
      const path = `/api/leaderboards/${id}/records`;
      await submit(path, cheater, { score: 999_999 });
      await submit(path, honest, { score: 80 });
      await submit(path, slower, { score: 60 });
      const page = (await browser.get(`/console/leaderboards/${id}`)).body;
      const action = `/console/leaderboards/${id}/records/${cheater.user.id}/delete`;
      expect(page).toContain(`action="${action}"`);
      const deleted = await browser.post(action, { reason: 'speed hack' });
      expect([deleted.statusCode, deleted.headers.location]).toEqual([303, `/console/leaderboards/${id}`]);
      const after = (await browser.get(`/console/leaderboards/${id}`)).body;
      expect(flashOf(after)).toBe('Record deleted; the records below it moved up.');
      expect(standingsOf(after).map(({ rank, user_id }) => ({ rank, user_id }))).toEqual([
        { rank: 1, user_id: honest.user.id },
        { rank: 2, user_id: slower.user.id },
      ]);
      const audit = await call(
        'GET',
        `/api/admin/audit?action=leaderboards.records.delete&target=${id}`,
        admin.access_token,
      );
      expect(audit.body.items).toEqual([
        expect.objectContaining({
          actor_id: admin.user.id,
          target_id: id,
          before: expect.objectContaining({ user_id: cheater.user.id, score: 999_999 }),
          after: { reason: 'speed hack' },
        }),
      ]);
    });

    it('shows a record deletion without a reason as the API’s 422 naming reason, and deletes nothing', async () => {
      const id = await board();
      const [player] = await players(1);
      if (!player) throw new Error('a player');
      await submit(`/api/leaderboards/${id}/records`, player, { score: 7 });
      await browser.post(`/console/leaderboards/${id}/records/${player.user.id}/delete`, { reason: '' });
      const page = (await browser.get(`/console/leaderboards/${id}`)).body;
      expect(flashOf(page)).toMatch(/^Unprocessable Content: .*\(body\.reason must be 1-500 characters\)/);
      expect(standingsOf(page).map((row) => row.user_id)).toEqual([player.user.id]);
      const audit = await call(
        'GET',
        `/api/admin/audit?action=leaderboards.records.delete&target=${id}`,
        admin.access_token,
      );
      expect(audit.body.items).toEqual([]);
    });

    it('deletes a board only once confirmed, saying so on its page, then goes back to the list', async () => {
      const id = await board();
      const unticked = await browser.post(`/console/leaderboards/${id}/delete`, {});
      expect([unticked.statusCode, unticked.headers.location]).toEqual([303, `/console/leaderboards/${id}`]);
      expect(flashOf((await browser.get(`/console/leaderboards/${id}`)).body)).toMatch(
        /^Nothing was deleted/,
      );
      expect((await boardNow(id)).status).toBe(200);
      const deleted = await browser.post(`/console/leaderboards/${id}/delete`, { confirm: 'yes' });
      expect([deleted.statusCode, deleted.headers.location]).toEqual([303, '/console/leaderboards']);
      expect((await boardNow(id)).status).toBe(404);
      const list = (await browser.get('/console/leaderboards')).body;
      expect(flashOf(list)).toBe('Board deleted.');
      expect(list).not.toContain(`href="/console/leaderboards/${id}"`);
    });

    it('shows an unknown board and a malformed id as the API’s 404 and 422 on the page', async () => {
      const missing = await browser.get('/console/leaderboards/no-such-board');
      expect(missing.statusCode).toBe(200);
      expect(missing.body).toMatch(/class="problem" role="alert">[\s\S]*404 NOT_FOUND/);
      const malformed = await browser.get('/console/leaderboards/Not%20A%20Slug');
      expect(malformed.statusCode).toBe(200);
      expect(malformed.body).toMatch(/class="problem" role="alert">[\s\S]*422 VALIDATION_FAILED/);
    });
  });

  describe('tournaments', () => {
    const tournamentNow = (id: string) => call('GET', `/api/tournaments/${id}`, admin.access_token);
    const create = (fields: Record<string, string>) =>
      browser.post('/console/tournaments/create', {
        title: 'Spring cup',
        description: '',
        sort: 'desc',
        operator: 'best',
        max_size: '',
        join_required: 'yes',
        ...fields,
      });

    it('creates a tournament through the page’s form, its times read as UTC, and lists it under its state', async () => {
      const id = unique('cup');
      const start = inputTime(Date.now() + 24 * HOUR);
      const end = inputTime(Date.now() + 48 * HOUR);
      const created = await create({
        id,
        start_at: start,
        end_at: end,
        max_size: '64',
        authoritative: 'yes',
      });
      expect([created.statusCode, created.headers.location]).toEqual([303, '/console/tournaments']);
      const tournament = (await tournamentNow(id)).body;
      expect(tournament).toMatchObject({
        title: 'Spring cup',
        state: 'upcoming',
        max_size: 64,
        join_required: true,
        authoritative: true,
      });
      expect(Date.parse(tournament.start_at)).toBe(Date.parse(`${start}:00Z`));
      expect(Date.parse(tournament.end_at)).toBe(Date.parse(`${end}:00Z`));
      const upcoming = (await browser.get('/console/tournaments?state=upcoming')).body;
      expect(flashOf(upcoming)).toMatch(/^Tournament “Spring cup” created: upcoming/);
      expect(upcoming).toContain(`href="/console/tournaments/${id}"`);
      expect((await browser.get('/console/tournaments?state=active')).body).not.toContain(
        `href="/console/tournaments/${id}"`,
      );
    });

    it('reads a datetime-local value as UTC, with or without seconds, and leaves anything else as typed', () => {
      expect(utcOf('2030-05-01T12:30')).toBe('2030-05-01T12:30:00Z');
      expect(utcOf('2030-05-01T12:30:15')).toBe('2030-05-01T12:30:15Z');
      expect(utcOf('tomorrow')).toBe('tomorrow');
      expect(utcOf(undefined)).toBe('');
    });

    it('shows an active tournament’s standings with the exact ranks of its submissions and its size', async () => {
      const id = unique('open-cup');
      await create({
        id,
        start_at: inputTime(Date.now() - HOUR),
        end_at: inputTime(Date.now() + 24 * HOUR),
        max_size: '10',
        join_required: '',
      });
      expect((await tournamentNow(id)).body).toMatchObject({ state: 'active', join_required: false });
      const [alice, bob, carol] = await players(3);
      if (!alice || !bob || !carol) throw new Error('three players');
      const path = `/api/tournaments/${id}/records`;
      await submit(path, alice, { score: 10 });
      await submit(path, bob, { score: 30 });
      await submit(path, carol, { score: 30, subscore: 2 });
      const page = await browser.get(`/console/tournaments/${id}`);
      expect(page.statusCode).toBe(200);
      expect(standingsOf(page.body)).toEqual([
        { rank: 1, user_id: carol.user.id, score: 30, subscore: 2, submissions: 1 },
        { rank: 2, user_id: bob.user.id, score: 30, subscore: 0, submissions: 1 },
        { rank: 3, user_id: alice.user.id, score: 10, subscore: 0, submissions: 1 },
      ]);
      expect(page.body).toContain('<dt>State</dt><dd>active</dd>');
      expect(page.body).toContain('<dt>Size</dt><dd>3 / 10</dd>');
      // The list shows the active tournaments unless the query names another state.
      const list = (await browser.get('/console/tournaments')).body;
      expect(list).toContain('<option value="active" selected>active</option>');
      expect(list).toContain(`href="/console/tournaments/${id}"`);
    });

    it('shows an end before the start, a bad id and a bad max size as the API’s 422, and creates nothing', async () => {
      const id = unique('backwards');
      const refusal = async (fields: Record<string, string>) => {
        await create({
          id,
          start_at: inputTime(Date.now() + 48 * HOUR),
          end_at: inputTime(Date.now() + 24 * HOUR),
          ...fields,
        });
        const page = await browser.get('/console/tournaments');
        expect(page.statusCode).toBe(200);
        return flashOf(page.body);
      };
      expect(await refusal({})).toMatch(/^Unprocessable Content: .*\(end_at must be after start_at\)/);
      expect(await refusal({ id: 'Bad Id!', end_at: inputTime(Date.now() + 72 * HOUR) })).toMatch(
        /\(body\.id /,
      );
      expect(await refusal({ max_size: 'lots', end_at: inputTime(Date.now() + 72 * HOUR) })).toMatch(
        /\(body\.max_size /,
      );
      expect((await tournamentNow(id)).status).toBe(404);
    });

    it('shows a tournament id in use as the API’s conflict', async () => {
      const id = unique('twice');
      const times = { start_at: inputTime(Date.now() + HOUR), end_at: inputTime(Date.now() + 2 * HOUR) };
      await create({ id, ...times });
      await create({ id, ...times, title: 'Again' });
      expect(flashOf((await browser.get('/console/tournaments')).body)).toMatch(/^Conflict: /);
      expect((await tournamentNow(id)).body.title).toBe('Spring cup');
    });

    it('deletes a tournament only once confirmed, then goes back to the list', async () => {
      const id = unique('doomed');
      await create({ id, start_at: inputTime(Date.now() + HOUR), end_at: inputTime(Date.now() + 2 * HOUR) });
      const unticked = await browser.post(`/console/tournaments/${id}/delete`, {});
      expect([unticked.statusCode, unticked.headers.location]).toEqual([303, `/console/tournaments/${id}`]);
      expect(flashOf((await browser.get(`/console/tournaments/${id}`)).body)).toMatch(/^Nothing was deleted/);
      expect((await tournamentNow(id)).status).toBe(200);
      const deleted = await browser.post(`/console/tournaments/${id}/delete`, { confirm: 'yes' });
      expect([deleted.statusCode, deleted.headers.location]).toEqual([303, '/console/tournaments']);
      expect((await tournamentNow(id)).status).toBe(404);
      expect(flashOf((await browser.get('/console/tournaments')).body)).toBe('Tournament deleted.');
    });

    it('shows an unknown tournament as the API’s 404 on the page', async () => {
      const missing = await browser.get('/console/tournaments/no-such-cup');
      expect(missing.statusCode).toBe(200);
      expect(missing.body).toMatch(/class="problem" role="alert">[\s\S]*404 NOT_FOUND/);
    });
  });

  describe('roles', () => {
    it('refuses a moderator every page and form with a 403 page, changes nothing, and leaves them out of the navigation', async () => {
      const moderator = await registerWithRole(app(), 'moderator');
      const mod = await new ConsoleClient(app()).signedIn(moderator.user.username);
      const id = await createBoard(app(), admin.access_token, { id: unique('guarded') });
      for (const path of [
        '/console/leaderboards',
        `/console/leaderboards/${id}`,
        '/console/tournaments',
        '/console/tournaments/any-cup',
      ]) {
        const page = await mod.get(path);
        expect(page.statusCode, path).toBe(403);
        expect(page.body).toContain('Your roles do not open this page.');
      }
      const nav = (await mod.get('/console')).body;
      expect(nav).not.toContain('href="/console/leaderboards"');
      expect(nav).not.toContain('href="/console/tournaments"');
      const sneaky = unique('sneaky');
      expect((await mod.post('/console/leaderboards/create', { id: sneaky })).statusCode).toBe(403);
      expect((await call('GET', `/api/leaderboards/${sneaky}`, admin.access_token)).status).toBe(404);
      expect((await mod.post(`/console/leaderboards/${id}/delete`, { confirm: 'yes' })).statusCode).toBe(403);
      expect((await call('GET', `/api/leaderboards/${id}`, admin.access_token)).status).toBe(200);
    });

    it('shows an admin both pages in the navigation', async () => {
      const nav = (await browser.get('/console/tournaments')).body;
      expect(nav).toContain('href="/console/leaderboards"');
      expect(nav).toContain('href="/console/tournaments" aria-current="page"');
    });

    it('gives a plain user no console session, so the pages send them to sign in', async () => {
      const user = await registerUser(app());
      const visitor = new ConsoleClient(app());
      expect((await visitor.signIn(user.user.username)).statusCode).toBe(403);
      for (const path of ['/console/leaderboards', '/console/tournaments']) {
        const page = await visitor.get(path);
        expect([page.statusCode, page.headers.location]).toEqual([303, '/console/sign-in']);
      }
    });
  });
});
