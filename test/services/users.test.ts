import { describe, expect, it } from 'vitest';
import { useServices } from '../helpers/services.js';

describe("another user's public view", () => {
  const services = useServices();

  it.each([
    ['a malformed id', 'not-a-uuid'],
    ['an id with a stray character', '01a1ffb2-0000-7000-8000-00000000000g'],
    ['an unknown id', '01a1ffb2-0000-7000-8000-000000000000'],
  ])('answers %s with NOT_FOUND', async (_name, id) => {
    const { call, ctxFor, createUser } = services();
    const { user } = await createUser();
    await expect(call('users.get', ctxFor(user), { user_id: id })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('finds a user by the upper-case spelling of their id', async () => {
    const { call, ctxFor, createUser } = services();
    const viewer = await createUser();
    const target = await createUser();
    const view = await call('users.get', ctxFor(viewer.user), { user_id: target.user.id.toUpperCase() });
    expect(view).toEqual({
      id: target.user.id,
      username: target.username,
      created_at: target.tokens.user.created_at,
    });
  });

  it('refuses an anonymous caller with UNAUTHENTICATED, even for a malformed id', async () => {
    const { call, ctxFor } = services();
    await expect(call('users.get', ctxFor(null), { user_id: 'not-a-uuid' })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });
});
