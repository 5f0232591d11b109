import { describe, expect, it } from 'vitest';
import { userExistsSql, usernameSql } from '../../src/modules/users/index.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { useServices } from '../helpers/services.js';

/** The SQL fragments the users module exports for other modules' statements. */
describe("the users module's SQL fragments", () => {
  const services = useServices();

  const evaluate = async (sql: string, userId: string) => {
    const { ctxFor } = services();
    const [row] = await executeBound<{ value: unknown }>(ctxFor(null).data, `select ${sql} as value`, [
      userId,
    ]);
    return row?.value;
  };

  it("usernameSql gives the account's username, and null for an id of no account", async () => {
    const { user, username } = await services().createUser();
    expect(await evaluate(usernameSql('$1::uuid'), user.id)).toBe(username);
    expect(await evaluate(usernameSql('$1::uuid'), newId())).toBeNull();
  });

  it('userExistsSql is true for an account and false for an id of none', async () => {
    const { user } = await services().createUser();
    expect(await evaluate(userExistsSql('$1::uuid'), user.id)).toBe(true);
    expect(await evaluate(userExistsSql('$1::uuid'), newId())).toBe(false);
  });
});
