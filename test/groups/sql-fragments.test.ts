import { describe, expect, it } from 'vitest';
import { groupMemberSql } from '../../src/modules/groups/index.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { useServices } from '../helpers/services.js';

/** The SQL fragment the groups module exports for other modules' statements (group chat's store). */
describe("the groups module's SQL fragment", () => {
  const services = useServices();

  it('groupMemberSql is true for a member of the group and false for anyone else or another group', async () => {
    const { call, ctxFor, createUser } = services();
    const [owner, stranger] = [await createUser(), await createUser()];
    const group = await call('groups.create', ctxFor(owner.user), { name: `Fragment ${newId().slice(-8)}` });
    const isMember = async (groupId: string, userId: string) => {
      const [row] = await executeBound<{ value: boolean }>(
        ctxFor(null).data,
        `select ${groupMemberSql('$1::uuid', '$2::uuid')} as value`,
        [groupId, userId],
      );
      return row?.value;
    };
    expect(await isMember(group.id, owner.user.id)).toBe(true);
    expect(await isMember(group.id, stranger.user.id)).toBe(false);
    expect(await isMember(newId(), owner.user.id)).toBe(false);
  });
});
