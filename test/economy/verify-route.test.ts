import { describe, expect, it } from 'vitest';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

/** GET /api/economy/admin/verify: `atrium economy verify` for admins, over the API. */
describe('GET /api/economy/admin/verify', () => {
  const app = useTestApp();
  const verify = (token: string, query = '') =>
    app().http.inject({ method: 'GET', url: `/api/economy/admin/verify${query}`, headers: bearer(token) });
  const shiftRevenue = (by: number) =>
    queryRows(app().db, `update economy_accounts set balance = balance + ? where kind = 'platform_revenue'`, [
      by,
    ]);

  it('tells an admin the ledger is consistent when every balance is the sum of its entries', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const response = await verify(admin.access_token);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      ok: true,
      verified_at: expect.any(String),
      difference_count: 0,
      differences: [],
    });
  });

  it('lists a balance changed behind the ledger, as the CLI prints it', async () => {
    const admin = await registerWithRole(app(), 'admin');
    await shiftRevenue(5);
    try {
      const response = await verify(admin.access_token);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({
        ok: false,
        difference_count: 1,
        differences: [{ kind: 'balance', account: 'platform_revenue', stored: 5, entries: 0 }],
      });
    } finally {
      await shiftRevenue(-5);
    }
  });

  it.each(['moderator', 'user'] as const)('refuses a %s with 403 FORBIDDEN', async (role) => {
    const caller = role === 'user' ? await registerUser(app()) : await registerWithRole(app(), role);
    const response = await verify(caller.access_token);
    expect(response.statusCode).toBe(403);
    expect(response.json().code).toBe('FORBIDDEN');
  });

  it('refuses an unknown query parameter with 422 before the role check', async () => {
    const user = await registerUser(app());
    const response = await verify(user.access_token, '?deep=1');
    expect(response.statusCode).toBe(422);
    expect(response.json().code).toBe('VALIDATION_FAILED');
  });
});
