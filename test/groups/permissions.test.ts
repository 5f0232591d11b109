import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { useTestApp } from '../helpers/app.js';
import { groupCalls } from './groups.js';

type Actor = 'owner' | 'admin' | 'member' | 'outsider';
type Cast = Awaited<ReturnType<ReturnType<typeof groupCalls>['cast']>>;
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** One action of the table: its request, given the cast (the target is part of the action). */
interface Action {
  name: string;
  request: (cast: Cast) => { method: Method; url: string; body?: object };
}

const on = (name: string, request: Action['request']): Action => ({ name, request });
const member = (c: Cast, who: TokenResponse) => `/api/groups/${c.group.id}/members/${who.user.id}`;

const actions = {
  update: on('change the settings', (c) => ({
    method: 'PATCH',
    url: `/api/groups/${c.group.id}`,
    body: { description: 'x' },
  })),
  delete: on('delete the group', (c) => ({ method: 'DELETE', url: `/api/groups/${c.group.id}` })),
  requests: on('list the join requests', (c) => ({
    method: 'GET',
    url: `/api/groups/${c.group.id}/requests`,
  })),
  approve: on('approve the request', (c) => ({
    method: 'POST',
    url: `/api/groups/${c.group.id}/requests/${c.requester.user.id}/approve`,
  })),
  decline: on('decline the request', (c) => ({
    method: 'POST',
    url: `/api/groups/${c.group.id}/requests/${c.requester.user.id}/decline`,
  })),
  removeMember: on('remove the member', (c) => ({ method: 'DELETE', url: member(c, c.member) })),
  removeAdmin: on('remove the admin', (c) => ({ method: 'DELETE', url: member(c, c.admin) })),
  removeOwner: on('remove the owner', (c) => ({ method: 'DELETE', url: member(c, c.owner) })),
  promoteMember: on('make the member an admin', (c) => ({
    method: 'PATCH',
    url: member(c, c.member),
    body: { role: 'admin' },
  })),
  demoteAdmin: on('make the admin a member', (c) => ({
    method: 'PATCH',
    url: member(c, c.admin),
    body: { role: 'member' },
  })),
  demoteOwner: on("change the owner's role", (c) => ({
    method: 'PATCH',
    url: member(c, c.owner),
    body: { role: 'member' },
  })),
  makeOwner: on('set the role owner', (c) => ({
    method: 'PATCH',
    url: member(c, c.member),
    body: { role: 'owner' },
  })),
  transferToMember: on('transfer the group to the member', (c) => ({
    method: 'POST',
    url: `/api/groups/${c.group.id}/transfer`,
    body: { user_id: c.member.user.id },
  })),
  transferToSelf: on('transfer the group to themselves', (c) => ({
    method: 'POST',
    url: `/api/groups/${c.group.id}/transfer`,
    body: { user_id: c.owner.user.id },
  })),
  claim: on('claim the owned group', (c) => ({ method: 'POST', url: `/api/groups/${c.group.id}/claim` })),
  join: on('join the group', (c) => ({ method: 'POST', url: `/api/groups/${c.group.id}/members` })),
  read: on('read the group', (c) => ({ method: 'GET', url: `/api/groups/${c.group.id}` })),
  roster: on('read the roster', (c) => ({ method: 'GET', url: `/api/groups/${c.group.id}/members` })),
  chat: on('read the chat', (c) => ({ method: 'GET', url: `/api/groups/${c.group.id}/messages` })),
} satisfies Record<string, Action>;

type Expected = number | readonly [status: number, code: string];
const FORBIDDEN = [403, 'FORBIDDEN'] as const;
const CONFLICT = [409, 'CONFLICT'] as const;

/**
 * The permission table (docs/groups.md): for each action, what each role answers. Acting on
 * oneself is the member removing or demoting themselves (the rows whose target is the actor).
 */
const table: [keyof typeof actions, Record<Actor, Expected>][] = [
  ['update', { owner: 200, admin: 200, member: FORBIDDEN, outsider: FORBIDDEN }],
  ['delete', { owner: 204, admin: FORBIDDEN, member: FORBIDDEN, outsider: FORBIDDEN }],
  ['requests', { owner: 200, admin: 200, member: FORBIDDEN, outsider: FORBIDDEN }],
  ['approve', { owner: 201, admin: 201, member: FORBIDDEN, outsider: FORBIDDEN }],
  ['decline', { owner: 204, admin: 204, member: FORBIDDEN, outsider: FORBIDDEN }],
  // The member removing themselves is leaving; so is the admin below.
  ['removeMember', { owner: 204, admin: 204, member: 204, outsider: FORBIDDEN }],
  ['removeAdmin', { owner: 204, admin: 204, member: FORBIDDEN, outsider: FORBIDDEN }],
  ['removeOwner', { owner: CONFLICT, admin: FORBIDDEN, member: FORBIDDEN, outsider: FORBIDDEN }],
  ['promoteMember', { owner: 200, admin: 200, member: FORBIDDEN, outsider: FORBIDDEN }],
  // The admin making themselves a member is stepping down.
  ['demoteAdmin', { owner: 200, admin: 200, member: FORBIDDEN, outsider: FORBIDDEN }],
  ['demoteOwner', { owner: CONFLICT, admin: FORBIDDEN, member: FORBIDDEN, outsider: FORBIDDEN }],
  [
    'makeOwner',
    {
      owner: [422, 'VALIDATION_FAILED'],
      admin: [422, 'VALIDATION_FAILED'],
      member: [422, 'VALIDATION_FAILED'],
      outsider: [422, 'VALIDATION_FAILED'],
    },
  ],
  ['transferToMember', { owner: 200, admin: FORBIDDEN, member: FORBIDDEN, outsider: FORBIDDEN }],
  [
    'transferToSelf',
    { owner: [422, 'VALIDATION_FAILED'], admin: FORBIDDEN, member: FORBIDDEN, outsider: FORBIDDEN },
  ],
  ['claim', { owner: CONFLICT, admin: CONFLICT, member: CONFLICT, outsider: CONFLICT }],
  // The group is closed: an outsider's join is a request (202).
  ['join', { owner: CONFLICT, admin: CONFLICT, member: CONFLICT, outsider: 202 }],
  ['read', { owner: 200, admin: 200, member: 200, outsider: 200 }],
  ['roster', { owner: 200, admin: 200, member: 200, outsider: 200 }],
  ['chat', { owner: 200, admin: 200, member: 200, outsider: FORBIDDEN }],
];

const READS = new Set<keyof typeof actions>(['requests', 'read', 'roster', 'chat']);

describe('the group permission table', () => {
  const app = useTestApp({ SOCIAL_RATE_LIMIT_COUNT: 100_000, CREATE_RATE_LIMIT_COUNT: 100_000 });
  const { call, cast, stateOf } = groupCalls(app);

  const cases = table.flatMap(([action, byActor]) =>
    (Object.entries(byActor) as [Actor, Expected][]).map(([actor, expected]) => {
      const [status, code] = typeof expected === 'number' ? [expected, undefined] : expected;
      const title = `the ${actor} trying to ${actions[action].name} gets ${status}${code ? ` ${code}` : ''}`;
      return { title, action, actor, status, code };
    }),
  );

  it.each(cases)('$title', async ({ action, actor, status, code }) => {
    const c = await cast();
    const { method, url, body } = actions[action].request(c);
    const before = await stateOf(c.group.id);
    const response = await call(method, url, c[actor], body);
    expect(response.statusCode, response.body).toBe(status);
    if (code) expect(response.json().code).toBe(code);
    // A refusal, or a read, leaves every row of the group as it was.
    if (status >= 400 || READS.has(action)) expect(await stateOf(c.group.id)).toEqual(before);
    else expect(await stateOf(c.group.id)).not.toEqual(before);
  });
});
