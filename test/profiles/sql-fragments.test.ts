import { describe, expect, it } from 'vitest';
import { DEFAULT_PRIVACY, dmPolicySql } from '../../src/modules/profiles/index.js';
import { executeBound } from '../../src/platform/db.js';
import { useServices } from '../helpers/services.js';

/** The SQL fragment the profiles module exports for other modules' statements (a direct message's store). */
describe("the profiles module's SQL fragment", () => {
  const services = useServices();

  const dmPolicyOf = async (userId: string) => {
    const { ctxFor } = services();
    const [row] = await executeBound<{ value: string }>(
      ctxFor(null).data,
      `select ${dmPolicySql('$1::uuid')} as value`,
      [userId],
    );
    return row?.value;
  };

  it('dmPolicySql gives the saved dm_policy, and the default for a user who saved no profile', async () => {
    const { call, ctxFor, createUser } = services();
    const [saved, unsaved] = [await createUser(), await createUser()];
    await call('profile.update', ctxFor(saved.user), { privacy: { dm_policy: 'friends' } });
    expect(await dmPolicyOf(saved.user.id)).toBe('friends');
    expect(await dmPolicyOf(unsaved.user.id)).toBe(DEFAULT_PRIVACY.dm_policy);
  });
});
