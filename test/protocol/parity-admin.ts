import { expect } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { uniqueGroupName } from '../groups/groups.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import type { RestName, Row } from './parity-types.js';

/** The administration rows of the parity table (`/api/admin/...`), run as one admin. */

type AdminName = Extract<RestName, `admin.${string}`>;

export function adminRows(appOf: () => TestApp): { [N in AdminName]: Row<N> } {
  let admin: Promise<TokenResponse> | undefined;
  const anAdmin = () => {
    admin ??= registerWithRole(appOf(), 'admin');
    return admin;
  };
  const fresh = async () => (await registerUser(appOf())).user.id;
  /** A world of `me` made once, which the world rows read and set to the same visibility. */
  let world: Promise<string> | undefined;
  const aWorld = (me: TokenResponse) => {
    world ??= createWorld(appOf(), me.access_token, { name: uniqueGroupName('Admin parity') }).then(
      (created) => created.worldId,
    );
    return world;
  };
  /** A new group of `me` (each deleting run takes its own); answers its id and name. */
  const aGroup = async (me: TokenResponse) => {
    const name = uniqueGroupName('Admin parity');
    const created = await appOf().http.inject({
      method: 'POST',
      url: '/api/groups',
      headers: bearer(me.access_token),
      payload: { name },
    });
    if (created.statusCode !== 201) throw new Error(`group: ${created.statusCode} ${created.body}`);
    return { groupId: (created.json() as { id: string }).id, name };
  };
  let group: ReturnType<typeof aGroup> | undefined;
  return {
    'admin.config': { prepare: async () => ({ token: (await anAdmin()).access_token }) },
    'admin.users.list': {
      prepare: async ({ other }) => ({
        token: (await anAdmin()).access_token,
        input: { query: other.user.username.toUpperCase(), limit: 5 },
      }),
    },
    'admin.users.get': {
      prepare: async ({ other }) => ({
        token: (await anAdmin()).access_token,
        input: { user_id: other.user.id },
      }),
    },
    'admin.parties.ofUser': {
      prepare: async ({ other }) => {
        await appOf().http.inject({
          method: 'POST',
          url: '/api/parties',
          headers: bearer(other.access_token),
        });
        return { token: (await anAdmin()).access_token, input: { user_id: other.user.id } };
      },
    },
    'admin.users.suspend': {
      fresh: true,
      prepare: async () => ({
        token: (await anAdmin()).access_token,
        input: {
          user_id: await fresh(),
          reason: ' parity ',
          until: new Date(Date.now() + 30 * 86_400_000).toISOString(),
        },
      }),
    },
    'admin.users.unsuspend': {
      fresh: true,
      prepare: async () => {
        const token = (await anAdmin()).access_token;
        const user_id = await fresh();
        const suspended = await appOf().http.inject({
          method: 'POST',
          url: `/api/admin/users/${user_id}/suspension`,
          headers: bearer(token),
          payload: { reason: 'parity' },
        });
        expect(suspended.statusCode, suspended.body).toBe(200);
        return { token, input: { user_id } };
      },
    },
    'admin.users.roles.grant': {
      fresh: true,
      prepare: async () => ({
        token: (await anAdmin()).access_token,
        input: { user_id: await fresh(), role: 'moderator' },
      }),
    },
    'admin.users.roles.revoke': {
      fresh: true,
      prepare: async () => ({
        token: (await anAdmin()).access_token,
        input: { user_id: (await registerWithRole(appOf(), 'moderator')).user.id, role: 'moderator' },
      }),
    },
    'admin.users.sessions.revoke': {
      fresh: true,
      prepare: async () => ({ token: (await anAdmin()).access_token, input: { user_id: await fresh() } }),
    },
    'admin.audit.list': {
      prepare: async ({ me }) => ({
        token: (await anAdmin()).access_token,
        input: { target: me.user.id, limit: 10 },
      }),
    },
    'admin.worlds.list': {
      prepare: async ({ me }) => {
        await aWorld(me);
        return { token: (await anAdmin()).access_token, input: { owner_id: me.user.id, limit: 2 } };
      },
    },
    'admin.worlds.update': {
      prepare: async ({ me }) => ({
        token: (await anAdmin()).access_token,
        input: { world_id: await aWorld(me), visibility: 'unlisted' },
      }),
    },
    'admin.servers.list': {
      prepare: async ({ me }) => ({
        token: (await anAdmin()).access_token,
        input: { world_id: await aWorld(me), status: 'running' },
      }),
    },
    'admin.groups.list': {
      prepare: async ({ me }) => {
        group ??= aGroup(me);
        return { token: (await anAdmin()).access_token, input: { query: (await group).name, limit: 5 } };
      },
    },
    'admin.groups.removeMember': {
      prepare: async ({ me }) => {
        const { groupId } = await aGroup(me);
        const member = await registerUser(appOf());
        const joined = await appOf().http.inject({
          method: 'POST',
          url: `/api/groups/${groupId}/members`,
          headers: bearer(member.access_token),
        });
        if (joined.statusCode !== 201) throw new Error(`join: ${joined.statusCode} ${joined.body}`);
        return {
          token: (await anAdmin()).access_token,
          input: { group_id: groupId, user_id: member.user.id },
        };
      },
    },
    'admin.groups.delete': {
      prepare: async ({ me }) => ({
        token: (await anAdmin()).access_token,
        input: { group_id: (await aGroup(me)).groupId },
      }),
    },
  };
}
