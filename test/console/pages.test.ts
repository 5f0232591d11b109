import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { suspensionUntil } from '../../src/modules/console/pages/users.js';
import { auditEntriesOf } from '../audit/audit.js';
import { gameServerCalls, recordingCommand } from '../gameservers/gameservers.js';
import { groupCalls } from '../groups/groups.js';
import { login, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld, worldWithHistory as historyWorld } from '../helpers/worlds.js';
import { ConsoleClient } from './console-client.js';

/**
 * The console's users, worlds, game servers, groups and audit log pages over inject: each renders
 * for its role, refuses the wrong one with a 403 page, and its forms change what the API says.
 */
describe('the operator console’s administration pages', () => {
  const { command } = recordingCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, GAMESERVER_READY_TIMEOUT_MS: 20_000 });
  const { expectStatus, createGroup, joined } = groupCalls(app);
  const servers = gameServerCalls(app);
  const operator = async (role: 'moderator' | 'admin') => {
    const tokens = await registerWithRole(app(), role);
    return { tokens, console: await new ConsoleClient(app()).signedIn(tokens.user.username) };
  };
  const rolesOf = async (userId: string) =>
    (
      await queryRows<{ roles: string[] }>(
        app().db,
        'select array_to_json(roles) as roles from users where id = ?',
        [userId],
      )
    )[0]?.roles;
  const suspendedAt = async (userId: string) =>
    (
      await queryRows<{ s: string | null }>(app().db, 'select suspended_at as s from users where id = ?', [
        userId,
      ])
    )[0]?.s;
  const worldWithHistory = () => historyWorld(app(), { name: 'Vandalised keep' });
  const contentRevision = async (worldId: string) =>
    Number(
      (
        await queryRows<{ r: string }>(app().db, 'select content_revision as r from worlds where id = ?', [
          worldId,
        ])
      )[0]?.r,
    );

  describe('users', () => {
    it('finds an account by name and shows a moderator its roles, suspension and sessions, without the admins’ forms', async () => {
      const { console: browser } = await operator('moderator');
      const target = await registerUser(app());
      const list = await browser.get(`/console/users?query=${target.user.username}`);
      expect(list.statusCode).toBe(200);
      expect(list.body).toContain(`href="/console/users/${target.user.id}"`);
      const page = await browser.get(`/console/users/${target.user.id}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(`<h2>${target.user.username}</h2>`);
      expect(page.body).toContain('Most recent sessions');
      expect(page.body).toContain('>Suspend</button>');
      expect(page.body).not.toContain('Grant moderator');
      expect(page.body).not.toContain('Revoke every session');
      expect(page.body).toContain('In no party.');
    });

    it('shows the party an account is in, its leader marked', async () => {
      const { console: browser } = await operator('moderator');
      const [leader, member] = [await registerUser(app()), await registerUser(app())];
      const party = (await expectStatus(201, 'POST', '/api/parties', leader, { open: true })).json();
      await expectStatus(200, 'POST', `/api/parties/${party.id}/join`, member);
      const page = (await browser.get(`/console/users/${member.user.id}`)).body;
      expect(page).toContain(`<code>${party.id}</code> (open, 2 of 8)`);
      expect(page).toContain(`<code>${leader.user.username}</code></a> (leader)`);
      expect(page).toContain(
        `href="/console/users/${member.user.id}"><code>${member.user.username}</code></a></td>`,
      );
      expect(page).not.toContain('In no party.');
    });

    it('offers a moderator no suspension form for staff, and shows an unknown account as the API’s 404', async () => {
      const { console: browser } = await operator('moderator');
      const staff = await registerWithRole(app(), 'moderator');
      expect((await browser.get(`/console/users/${staff.user.id}`)).body).not.toContain('>Suspend</button>');
      const missing = await browser.get('/console/users/00000000-0000-7000-8000-000000000000');
      expect(missing.statusCode).toBe(200);
      expect(missing.body).toMatch(/class="problem" role="alert">[\s\S]*404 NOT_FOUND/);
    });

    it('lets an admin grant and revoke a role, recorded in the audit log', async () => {
      const { console: browser, tokens: admin } = await operator('admin');
      const target = await registerUser(app());
      const grant = await browser.post(`/console/users/${target.user.id}/roles/grant`, { role: 'moderator' });
      expect(grant.statusCode).toBe(303);
      expect(grant.headers.location).toBe(`/console/users/${target.user.id}`);
      expect(await rolesOf(target.user.id)).toEqual(expect.arrayContaining(['user', 'moderator']));
      const page = await browser.get(`/console/users/${target.user.id}`);
      expect(page.body).toContain('now holds user, moderator');
      expect(page.body).toContain('Revoke moderator');
      await browser.post(`/console/users/${target.user.id}/roles/revoke`, { role: 'moderator' });
      expect(await rolesOf(target.user.id)).toEqual(['user']);
      expect((await auditEntriesOf(app().db, target.user.id)).map((entry) => entry.action)).toEqual([
        'users.roles.grant',
        'users.roles.revoke',
      ]);
      expect((await auditEntriesOf(app().db, target.user.id))[0]?.actor_id).toBe(admin.user.id);
    });

    it('refuses a moderator’s role grant with a 403 page and grants nothing', async () => {
      const { console: browser } = await operator('moderator');
      const target = await registerUser(app());
      const response = await browser.post(`/console/users/${target.user.id}/roles/grant`, { role: 'admin' });
      expect(response.statusCode).toBe(403);
      expect(response.body).toContain('Your roles do not open this page.');
      expect(await rolesOf(target.user.id)).toEqual(['user']);
    });

    it('shows a refused role as the API’s problem and changes nothing', async () => {
      const { console: browser } = await operator('admin');
      const target = await registerUser(app());
      await browser.post(`/console/users/${target.user.id}/roles/grant`, { role: 'emperor' });
      expect((await browser.get(`/console/users/${target.user.id}`)).body).toMatch(
        /class="flash error"[^>]*>[^<]*role/,
      );
      expect(await rolesOf(target.user.id)).toEqual(['user']);
      expect(await auditEntriesOf(app().db, target.user.id)).toEqual([]);
    });

    it('lets a moderator suspend for a duration, refusing the login, and lift it', async () => {
      const { console: browser } = await operator('moderator');
      const target = await registerUser(app());
      const suspend = await browser.post(`/console/users/${target.user.id}/suspend`, {
        reason: 'spam wave',
        until: '',
        duration: '1 day',
      });
      expect(suspend.statusCode).toBe(303);
      const refused = await login(app(), target.user.username);
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toMatchObject({ code: 'ACCOUNT_SUSPENDED', until: expect.any(String) });
      const page = await browser.get(`/console/users/${target.user.id}`);
      expect(page.body).toContain('is suspended until');
      expect(page.body).toContain('spam wave');
      await browser.post(`/console/users/${target.user.id}/unsuspend`, {});
      expect((await login(app(), target.user.username)).statusCode).toBe(200);
    });

    it('shows a suspension ending in the past as the API’s problem naming until, and suspends nobody', async () => {
      const { console: browser } = await operator('moderator');
      const target = await registerUser(app());
      await browser.post(`/console/users/${target.user.id}/suspend`, {
        reason: 'late',
        until: '2001-01-01T00:00',
      });
      expect((await browser.get(`/console/users/${target.user.id}`)).body).toMatch(
        /class="flash error"[^>]*>[^<]*\(until must be in the future\)/,
      );
      expect(await suspendedAt(target.user.id)).toBeNull();
      expect(await auditEntriesOf(app().db, target.user.id)).toEqual([]);
    });

    it('reads a datetime-local value as UTC and a duration from now, and leaves neither for until lifted', () => {
      expect(suspensionUntil({ until: '2030-05-01T12:30' })).toBe('2030-05-01T12:30:00Z');
      expect(suspensionUntil({ until: '', duration: '1 hour' }, Date.UTC(2030, 0, 1))).toBe(
        '2030-01-01T01:00:00.000Z',
      );
      expect(suspensionUntil({ until: '', duration: '' })).toBeUndefined();
      expect(suspensionUntil({ until: 'soon' })).toBe('soon');
    });

    it('lets an admin revoke every session of an account', async () => {
      const { console: browser } = await operator('admin');
      const target = await registerUser(app());
      await browser.post(`/console/users/${target.user.id}/sessions/revoke`, {});
      const refresh = await app().http.inject({
        method: 'POST',
        url: '/api/auth/refresh',
        payload: { refresh_token: target.refresh_token },
      });
      expect(refresh.statusCode).toBe(401);
      expect((await browser.get(`/console/users/${target.user.id}`)).body).toContain(
        '1 open session(s) revoked.',
      );
    });
  });

  describe('worlds', () => {
    it('shows a moderator any world, private ones too, with its revisions and no rollback form', async () => {
      const { console: browser } = await operator('moderator');
      const { worldId, first, second } = await worldWithHistory();
      const list = await browser.get('/console/worlds?query=Vandalised&visibility=private');
      expect(list.statusCode).toBe(200);
      expect(list.body).toContain(`href="/console/worlds/${worldId}"`);
      const page = await browser.get(`/console/worlds/${worldId}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(`<td>${first}</td>`);
      expect(page.body).toContain(`<td>${second}</td>`);
      expect(page.body).not.toContain('Roll back</button>');
      const rollback = await browser.post(`/console/worlds/${worldId}/rollback`, {
        revision: String(first),
        confirm: 'yes',
      });
      expect(rollback.statusCode).toBe(403);
      expect(await contentRevision(worldId)).toBe(second);
    });

    it('shows a private world by its name, owner and visibility, which its public record would not', async () => {
      const { console: browser } = await operator('moderator');
      const { owner, worldId } = await worldWithHistory();
      const page = await browser.get(`/console/worlds/${worldId}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('<h2>Vandalised keep</h2>');
      expect(page.body).toContain(
        `<dt>Owner</dt><dd><a href="/console/users/${owner.user.id}"><code>${owner.user.username}</code></a></dd>`,
      );
      expect(page.body).toContain('<dt>Visibility</dt><dd>private</dd>');
    });

    it('rolls a world back for an admin only once confirmed, recorded in the audit log', async () => {
      const { console: browser } = await operator('admin');
      const { worldId, first, second } = await worldWithHistory();
      expect((await browser.get(`/console/worlds/${worldId}`)).body).toContain('Roll back</button>');
      await browser.post(`/console/worlds/${worldId}/rollback`, { revision: String(first) });
      expect((await browser.get(`/console/worlds/${worldId}`)).body).toContain('Nothing was rolled back');
      expect(await contentRevision(worldId)).toBe(second);
      await browser.post(`/console/worlds/${worldId}/rollback`, {
        revision: String(first),
        expected_content_revision: String(second),
        confirm: 'yes',
      });
      expect(await contentRevision(worldId)).toBeGreaterThan(second);
      expect((await browser.get(`/console/worlds/${worldId}`)).body).toContain(
        'Rolled back: 1 chunk(s) restored',
      );
      expect((await auditEntriesOf(app().db, worldId)).map((entry) => entry.action)).toEqual([
        'worlds.rollback',
      ]);
    });

    it('shows a rollback to a revision past the content as the API’s problem and writes nothing', async () => {
      const { console: browser } = await operator('admin');
      const { worldId, second } = await worldWithHistory();
      await browser.post(`/console/worlds/${worldId}/rollback`, {
        revision: String(second + 1000),
        confirm: 'yes',
      });
      expect((await browser.get(`/console/worlds/${worldId}`)).body).toMatch(
        /class="flash error"[^>]*>[^<]*revision/,
      );
      expect(await contentRevision(worldId)).toBe(second);
    });

    it('lets an admin change a world’s visibility', async () => {
      const { console: browser } = await operator('admin');
      const { worldId } = await worldWithHistory();
      await browser.post(`/console/worlds/${worldId}/visibility`, { visibility: 'public' });
      const [row] = await queryRows<{ v: string }>(
        app().db,
        'select visibility::text as v from worlds where id = ?',
        [worldId],
      );
      expect(row?.v).toBe('public');
      expect((await browser.get(`/console/worlds/${worldId}`)).body).toContain('is now public');
    });
  });

  describe('game servers', () => {
    it('refuses a moderator the page with a 403 page', async () => {
      const { console: browser } = await operator('moderator');
      expect((await browser.get('/console/game-servers')).statusCode).toBe(403);
    });

    it('lists running servers to an admin and stops one', async () => {
      const { console: browser, tokens: admin } = await operator('admin');
      const owner = await registerUser(app());
      const { worldId } = await createWorld(app(), owner.access_token);
      const server = await servers.spawn(owner, worldId);
      await servers.settled(owner, server.server_id);
      const page = await browser.get('/console/game-servers?status=running');
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(server.server_id);
      // Its access and owner: started by its world's owner, public.
      expect(page.body).toContain(
        `<td>public</td><td><a href="/console/users/${owner.user.id}"><code>${owner.user.id}</code></a></td>`,
      );
      await browser.post(`/console/game-servers/${server.server_id}/stop`, {});
      const after = await expectStatus(200, 'GET', `/api/servers/${server.server_id}`, admin);
      expect(after.json().status).toBe('stopped');
      expect((await browser.get('/console/game-servers?status=running')).body).toContain('Server stopped.');
    });
  });

  describe('groups', () => {
    const groupWithMember = async () => {
      const [owner, member] = [await registerUser(app()), await registerUser(app())];
      const group = await createGroup(owner, { join_policy: 'open' });
      await joined(member, group.id);
      return { group, owner, member };
    };
    const memberIds = async (groupId: string) =>
      (
        await queryRows<{ user_id: string }>(
          app().db,
          'select user_id from group_members where group_id = ?',
          [groupId],
        )
      ).map((row) => row.user_id);

    it('shows a moderator a group’s roster and removes a member', async () => {
      const { console: browser } = await operator('moderator');
      const { group, owner, member } = await groupWithMember();
      const list = await browser.get(`/console/groups?query=${encodeURIComponent(group.name)}`);
      expect(list.body).toContain(`href="/console/groups/${group.id}"`);
      const page = await browser.get(`/console/groups/${group.id}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(member.user.username);
      expect(page.body).toContain(`Remove ${member.user.username}`);
      expect(page.body).not.toContain(`Remove ${owner.user.username}`);
      await browser.post(`/console/groups/${group.id}/members/${member.user.id}/remove`, {});
      expect(await memberIds(group.id)).toEqual([owner.user.id]);
      expect((await browser.get(`/console/groups/${group.id}`)).body).toContain('Member removed.');
    });

    it('deletes a group only once confirmed, saying so on its page, then goes back to the list', async () => {
      const { console: browser } = await operator('moderator');
      const { group } = await groupWithMember();
      const unticked = await browser.post(`/console/groups/${group.id}/delete`, {});
      expect([unticked.statusCode, unticked.headers.location]).toEqual([303, `/console/groups/${group.id}`]);
      expect((await browser.get(`/console/groups/${group.id}`)).body).toContain('Nothing was deleted');
      expect(await memberIds(group.id)).toHaveLength(2);
      const deleted = await browser.post(`/console/groups/${group.id}/delete`, { confirm: 'yes' });
      expect([deleted.statusCode, deleted.headers.location]).toEqual([303, '/console/groups']);
      expect(await memberIds(group.id)).toEqual([]);
      expect((await browser.get('/console/groups')).body).toContain('Group deleted.');
    });
  });

  describe('audit log', () => {
    it('shows an admin the entries of an action with their states as escaped JSON', async () => {
      const { console: browser } = await operator('admin');
      const target = await registerUser(app());
      await browser.post(`/console/users/${target.user.id}/suspend`, { reason: '<b>bold</b> spam' });
      const page = await browser.get(`/console/audit?action=users.suspend&target=${target.user.id}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('<code>users.suspend</code>');
      expect(page.body).toMatch(/<pre>\{\n {2}&quot;suspension&quot;: \{/);
      expect(page.body).toContain('&lt;b&gt;bold&lt;/b&gt; spam');
      expect(page.body).not.toContain('<b>bold</b>');
    });

    it('shows a moderator their own entries, and another actor’s as the API’s 403', async () => {
      const { console: browser, tokens: moderator } = await operator('moderator');
      const target = await registerUser(app());
      await browser.post(`/console/users/${target.user.id}/suspend`, { reason: 'mine' });
      const own = await browser.get('/console/audit');
      expect(own.statusCode).toBe(200);
      expect(own.body).toContain(target.user.id);
      const other: TokenResponse = await registerUser(app());
      const refused = await browser.get(`/console/audit?actor=${other.user.id}`);
      expect(refused.statusCode).toBe(200);
      expect(refused.body).toMatch(/class="problem" role="alert">[\s\S]*403 FORBIDDEN/);
      expect(moderator.user.id).not.toBe(other.user.id);
    });

    it('shows a malformed filter as the API’s 422, naming the field', async () => {
      const { console: browser } = await operator('admin');
      const page = await browser.get('/console/audit?action=Not%20An%20Action');
      expect(page.statusCode).toBe(200);
      expect(page.body).toMatch(/422 VALIDATION_FAILED[\s\S]*<code>querystring\.action<\/code>/);
    });
  });
});
