import { describe, expect, it } from 'vitest';
import { newId } from '../../src/platform/ids.js';
import { registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { partyCalls } from './parties.js';

/** GET /api/admin/users/{user_id}/party: the console's view of a user's party (docs/parties.md). */
describe("staff reading a user's party", () => {
  const app = useTestApp();
  const { expectStatus, users, partyOf, refused } = partyCalls(app);

  it("answers moderators and admins the user's party as its members see it", async () => {
    const [leader, member] = await users(2);
    const party = await partyOf(leader, [member]);
    for (const role of ['moderator', 'admin'] as const) {
      const staff = await registerWithRole(app(), role);
      const seen = await expectStatus(200, 'GET', `/api/admin/users/${member.user.id}/party`, staff);
      expect(seen.json()).toEqual((await expectStatus(200, 'GET', '/api/parties/me', member)).json());
      expect(seen.json()).toMatchObject({ id: party.id, leader_id: leader.user.id });
    }
  });

  it('answers 404 for a user in no party, an unknown user and an id that is no id', async () => {
    const [loner] = await users(1);
    const staff = await registerWithRole(app(), 'moderator');
    for (const userId of [loner.user.id, newId(), 'not-an-id']) {
      await refused(404, 'NOT_FOUND', 'GET', `/api/admin/users/${userId}/party`, staff);
    }
  });

  it('refuses a user without a staff role with 403, and no token with 401', async () => {
    const [leader, member, outsider] = await users(3);
    await partyOf(leader, [member]);
    await refused(403, 'FORBIDDEN', 'GET', `/api/admin/users/${member.user.id}/party`, leader);
    await refused(403, 'FORBIDDEN', 'GET', `/api/admin/users/${member.user.id}/party`, outsider);
    const anonymous = await app().http.inject({
      method: 'GET',
      url: `/api/admin/users/${member.user.id}/party`,
    });
    expect(anonymous.statusCode).toBe(401);
  });
});
