import { describe, expect, it } from 'vitest';
import { blockBetweenSql, friendIdsSql, friendsBetweenSql } from '../../src/modules/social/index.js';
import { executeBound } from '../../src/platform/db.js';
import { useServices } from '../helpers/services.js';

/** The SQL fragments the social module exports for other modules' statements (a direct message's store). */
describe("the social module's SQL fragments", () => {
  const services = useServices();

  const evaluate = async (fragment: (a: string, b: string) => string, a: string, b: string) => {
    const { ctxFor } = services();
    const [row] = await executeBound<{ value: boolean }>(
      ctxFor(null).data,
      `select ${fragment('$1::uuid', '$2::uuid')} as value`,
      [a, b],
    );
    return row?.value;
  };

  it('friendsBetweenSql is true either way round once a request is accepted, and false while it is pending', async () => {
    const { call, ctxFor, createUser } = services();
    const [alice, bob] = [await createUser(), await createUser()];
    await call('friendRequests.create', ctxFor(alice.user), { user_id: bob.user.id });
    expect(await evaluate(friendsBetweenSql, alice.user.id, bob.user.id)).toBe(false);
    await call('friendRequests.accept', ctxFor(bob.user), { user_id: alice.user.id });
    expect(await evaluate(friendsBetweenSql, alice.user.id, bob.user.id)).toBe(true);
    expect(await evaluate(friendsBetweenSql, bob.user.id, alice.user.id)).toBe(true);
  });

  it("friendIdsSql names a user's accepted friends either way round, and no one with a pending request", async () => {
    const { call, ctxFor, createUser } = services();
    const [alice, bob, carol, dave] = [
      await createUser(),
      await createUser(),
      await createUser(),
      await createUser(),
    ];
    await call('friendRequests.create', ctxFor(alice.user), { user_id: bob.user.id });
    await call('friendRequests.accept', ctxFor(bob.user), { user_id: alice.user.id });
    await call('friendRequests.create', ctxFor(carol.user), { user_id: alice.user.id });
    await call('friendRequests.accept', ctxFor(alice.user), { user_id: carol.user.id });
    await call('friendRequests.create', ctxFor(alice.user), { user_id: dave.user.id });
    const friendsOf = async (id: string) =>
      (
        await executeBound<{ id: string }>(
          ctxFor(null).data,
          `select f.id from (${friendIdsSql('$1::uuid')}) as f(id)`,
          [id],
        )
      )
        .map((row) => row.id)
        .sort();
    expect(await friendsOf(alice.user.id)).toEqual([bob.user.id, carol.user.id].sort());
    expect(await friendsOf(dave.user.id)).toEqual([]);
  });

  it('blockBetweenSql is true either way round when one blocked the other, and false otherwise', async () => {
    const { call, ctxFor, createUser } = services();
    const [alice, bob, carol] = [await createUser(), await createUser(), await createUser()];
    await call('blocks.put', ctxFor(alice.user), { user_id: bob.user.id });
    expect(await evaluate(blockBetweenSql, alice.user.id, bob.user.id)).toBe(true);
    expect(await evaluate(blockBetweenSql, bob.user.id, alice.user.id)).toBe(true);
    expect(await evaluate(blockBetweenSql, alice.user.id, carol.user.id)).toBe(false);
  });
});
