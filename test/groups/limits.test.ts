import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { groupCalls, uniqueGroupName } from './groups.js';

const users = (app: () => Parameters<typeof registerUser>[0], n: number): Promise<TokenResponse[]> =>
  Promise.all(Array.from({ length: n }, () => registerUser(app())));

describe('the member cap and ownership under concurrency', () => {
  const app = useTestApp({ GROUP_MAX_MEMBERS: 10, SOCIAL_RATE_LIMIT_COUNT: 100_000 });
  const { call, expectStatus, createGroup, joined, requested, setRole, stateOf } = groupCalls(app);

  it('lets exactly GROUP_MAX_MEMBERS in when 30 users join at once; the others get 409 GROUP_FULL', async () => {
    const owner = await registerUser(app());
    const group = await createGroup(owner);
    const joiners = await users(app, 30);
    const answers = await Promise.all(
      joiners.map((user) => call('POST', `/api/groups/${group.id}/members`, user)),
    );
    const statuses = answers.map((answer) => (answer.statusCode === 201 ? 201 : answer.json().code));
    expect(statuses.filter((s) => s === 201)).toHaveLength(9);
    expect(statuses.filter((s) => s === 'GROUP_FULL')).toHaveLength(21);
    const state = await stateOf(group.id);
    expect(state.members).toHaveLength(10);
    expect(state.group?.member_count).toBe(10);
  });

  it('lets exactly GROUP_MAX_MEMBERS in when the owner and an admin approve 30 requests at once', async () => {
    const [owner, admin] = (await users(app, 2)) as [TokenResponse, TokenResponse];
    const group = await createGroup(owner);
    await joined(admin, group.id);
    await setRole(owner, group.id, admin.user.id, 'admin');
    await expectStatus(200, 'PATCH', `/api/groups/${group.id}`, owner, { join_policy: 'closed' });
    const askers = await users(app, 30);
    for (const asker of askers) await requested(asker, group.id);
    const answers = await Promise.all(
      askers.map((asker, i) =>
        call('POST', `/api/groups/${group.id}/requests/${asker.user.id}/approve`, i % 2 ? owner : admin),
      ),
    );
    expect(answers.filter((a) => a.statusCode === 201)).toHaveLength(8);
    expect(answers.filter((a) => a.statusCode === 409 && a.json().code === 'GROUP_FULL')).toHaveLength(22);
    const state = await stateOf(group.id);
    expect(state.members).toHaveLength(10);
    expect(state.group?.member_count).toBe(10);
    expect(state.requests).toHaveLength(22);
  });

  it('ends two transfers sent at once with exactly one new owner', async () => {
    const [owner, a, b] = (await users(app, 3)) as [TokenResponse, TokenResponse, TokenResponse];
    const group = await createGroup(owner);
    await joined(a, group.id);
    await joined(b, group.id);
    const answers = await Promise.all(
      [a, b].map((to) => call('POST', `/api/groups/${group.id}/transfer`, owner, { user_id: to.user.id })),
    );
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 403]);
    const winner = answers.find((r) => r.statusCode === 200)?.json().owner_id;
    const state = await stateOf(group.id);
    expect(state.group?.owner_id).toBe(winner);
    expect(state.members.filter((m) => m.role === 'owner')).toEqual([{ user_id: winner, role: 'owner' }]);
    expect(state.members).toContainEqual({ user_id: owner.user.id, role: 'admin' });
  });
});

describe('per-user rates of groups', () => {
  const app = useTestApp({ SOCIAL_RATE_LIMIT_COUNT: 2, CREATE_RATE_LIMIT_COUNT: 2 });
  const { call, createGroup, stateOf } = groupCalls(app);

  it('answers 429 RATE_LIMITED with Retry-After past CREATE_RATE_LIMIT_COUNT creations, creating nothing', async () => {
    const owner = await registerUser(app());
    await createGroup(owner);
    await createGroup(owner);
    const name = uniqueGroupName();
    const refused = await call('POST', '/api/groups', owner, { name });
    expect([refused.statusCode, refused.json().code]).toEqual([429, 'RATE_LIMITED']);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const search = await call('GET', `/api/groups?q=${encodeURIComponent(name)}`, owner);
    expect(search.json().items).toEqual([]);
  });

  it('answers 429 past SOCIAL_RATE_LIMIT_COUNT joins and requests, joining nothing', async () => {
    const user = await registerUser(app());
    const groups = [];
    for (let i = 0; i < 3; i += 1)
      groups.push(await createGroup(await registerUser(app()), { join_policy: i ? 'open' : 'closed' }));
    const [closed, open, third] = groups as [(typeof groups)[0], (typeof groups)[0], (typeof groups)[0]];
    expect((await call('POST', `/api/groups/${closed.id}/members`, user)).statusCode).toBe(202);
    expect((await call('POST', `/api/groups/${open.id}/members`, user)).statusCode).toBe(201);
    const refused = await call('POST', `/api/groups/${third.id}/members`, user);
    expect([refused.statusCode, refused.json().code]).toEqual([429, 'RATE_LIMITED']);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await stateOf(third.id)).members).toHaveLength(1);
  });
});
