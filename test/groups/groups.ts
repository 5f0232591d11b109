import { randomBytes } from 'node:crypto';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Group, GroupMember } from '../../protocol/groups.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** A group name no other test in the run will pick. */
export const uniqueGroupName = (prefix = 'Group') => `${prefix} ${randomBytes(5).toString('hex')}`;

/** What a group's tables hold for it, to compare before and after a refused call. */
export interface GroupState {
  group: Record<string, unknown> | undefined;
  members: { user_id: string; role: string }[];
  requests: { user_id: string }[];
}

/** The group tests' REST calls and table reads, for the app of a test file. */
export function groupCalls(app: () => TestApp) {
  const { call, expectStatus } = callsAs(app);

  /** A new group of `owner` (REST); answers it. */
  const createGroup = async (
    owner: TokenResponse,
    body: { name?: string; description?: string; join_policy?: 'open' | 'closed' } = {},
  ): Promise<Group> =>
    (await expectStatus(201, 'POST', '/api/groups', owner, { name: uniqueGroupName(), ...body })).json();

  /** `user` joins the open group (201), answering the member. */
  const joined = async (user: TokenResponse, groupId: string): Promise<GroupMember> =>
    (await expectStatus(201, 'POST', `/api/groups/${groupId}/members`, user)).json();

  /** `user` asks to join the closed group (202). */
  const requested = async (user: TokenResponse, groupId: string): Promise<void> => {
    await expectStatus(202, 'POST', `/api/groups/${groupId}/members`, user);
  };

  const setRole = (by: TokenResponse, groupId: string, userId: string, role: string) =>
    call('PATCH', `/api/groups/${groupId}/members/${userId}`, by, { role });

  /**
   * A group with an owner, an admin, a member and a pending requester (it is closed once they
   * joined), and a signed-in outsider: every role of the permission table.
   */
  const cast = async () => {
    const [owner, admin, member, requester, outsider] = (await Promise.all(
      Array.from({ length: 5 }, () => registerUser(app())),
    )) as [TokenResponse, TokenResponse, TokenResponse, TokenResponse, TokenResponse];
    const group = await createGroup(owner);
    await joined(admin, group.id);
    await joined(member, group.id);
    await expectStatus(200, 'PATCH', `/api/groups/${group.id}/members/${admin.user.id}`, owner, {
      role: 'admin',
    });
    await expectStatus(200, 'PATCH', `/api/groups/${group.id}`, owner, { join_policy: 'closed' });
    await requested(requester, group.id);
    return { group, owner, admin, member, requester, outsider };
  };

  /** The group's rows as stored, in a fixed order. */
  const stateOf = async (groupId: string): Promise<GroupState> => {
    const [group] = await queryRows(
      app().db,
      'select id, name, description, join_policy, owner_id, member_count from groups where id = ?',
      [groupId],
    );
    return {
      group,
      members: await queryRows(
        app().db,
        'select user_id, role::text as role from group_members where group_id = ? order by user_id',
        [groupId],
      ),
      requests: await queryRows(
        app().db,
        'select user_id from group_join_requests where group_id = ? order by user_id',
        [groupId],
      ),
    };
  };

  return { call, expectStatus, createGroup, joined, requested, setRole, cast, stateOf };
}
