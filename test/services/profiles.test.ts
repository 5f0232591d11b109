import { describe, expect, it } from 'vitest';
import { queryRows } from '../helpers/database.js';
import { useServices } from '../helpers/services.js';

describe('profile update rules', () => {
  const services = useServices();

  const profileRows = async (userId: string) =>
    queryRows<{ bio: string; dm_policy: string }>(
      services().db,
      'select bio, dm_policy from profiles where user_id = ?',
      [userId],
    );

  it('refuses an anonymous caller with UNAUTHENTICATED', async () => {
    const { call, ctxFor } = services();
    await expect(call('profile.update', ctxFor(null), { bio: 'nobody' })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });

  it('answers an empty patch with the default profile and writes no row', async () => {
    const { call, ctxFor, createUser } = services();
    const { user } = await createUser();
    const profile = await call('profile.update', ctxFor(user), {});
    expect(profile).toMatchObject({ user_id: user.id, bio: '', updated_at: null });
    expect(await profileRows(user.id)).toEqual([]);
  });

  it('keeps the fields a later patch does not name', async () => {
    const { call, ctxFor, createUser } = services();
    const { user } = await createUser();
    await call('profile.update', ctxFor(user), { bio: 'first words' });
    const profile = await call('profile.update', ctxFor(user), { privacy: { dm_policy: 'friends' } });
    expect(profile).toMatchObject({
      bio: 'first words',
      privacy: { dm_policy: 'friends', profile_visibility: 'public' },
    });
    expect(await profileRows(user.id)).toEqual([{ bio: 'first words', dm_policy: 'friends' }]);
  });

  it('refuses a caller whose account was deleted with UNAUTHENTICATED and writes no profile', async () => {
    const { call, ctxFor, createUser, db } = services();
    const { user } = await createUser();
    await queryRows(db, 'delete from users where id = ?', [user.id]);
    await expect(call('profile.update', ctxFor(user), { bio: 'too late' })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    expect(await profileRows(user.id)).toEqual([]);
  });
});
