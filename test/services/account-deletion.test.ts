import { describe, expect, it } from 'vitest';
import { queryRows } from '../helpers/database.js';
import { type ServiceUser, useServices } from '../helpers/services.js';

describe('account deletion', () => {
  const services = useServices();

  const count = async (sql: string, params: unknown[]) =>
    (await queryRows<{ n: number }>(services().db, sql, params))[0]?.n;
  /** What deletion touches: the user row, its sessions, and the log of revoked sessions. */
  const stateOf = async ({ user }: ServiceUser) => ({
    users: await count('select count(*)::int as n from users where id = ?', [user.id]),
    liveSessions: await count(
      'select count(*)::int as n from sessions where user_id = ? and revoked_at is null',
      [user.id],
    ),
    revocations: await count('select count(*)::int as n from session_revocations where session_id = ?', [
      user.sessionId,
    ]),
  });

  it('refuses a wrong password with PASSWORD_INCORRECT and writes nothing: the account, its sessions and its tokens stay', async () => {
    const { call, ctxFor, createUser, tokens } = services();
    const alice = await createUser();
    await expect(
      call('users.deleteMe', ctxFor(alice.user), { password: `${alice.password}!` }),
    ).rejects.toMatchObject({ code: 'PASSWORD_INCORRECT' });
    expect(await stateOf(alice)).toEqual({ users: 1, liveSessions: 1, revocations: 0 });
    await expect(tokens.verify(alice.tokens.access_token)).resolves.toMatchObject({ id: alice.user.id });
  });

  it('deletes the account and its sessions for the right password, and its access token stops working', async () => {
    const { call, ctxFor, createUser, tokens } = services();
    const bob = await createUser();
    await call('users.deleteMe', ctxFor(bob.user), { password: bob.password });
    expect(await stateOf(bob)).toEqual({ users: 0, liveSessions: 0, revocations: 1 });
    await expect(tokens.verify(bob.tokens.access_token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('refuses a caller whose account is already gone with UNAUTHENTICATED', async () => {
    const { call, ctxFor, createUser } = services();
    const carol = await createUser();
    await call('users.deleteMe', ctxFor(carol.user), { password: carol.password });
    await expect(
      call('users.deleteMe', ctxFor(carol.user), { password: carol.password }),
    ).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('refuses an anonymous caller with UNAUTHENTICATED', async () => {
    const { call, ctxFor } = services();
    await expect(call('users.deleteMe', ctxFor(null), { password: 'whatever' })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });
});
