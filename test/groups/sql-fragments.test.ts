import { describe, expect, it } from 'vitest';
import { groupChatAccessSql } from '../../src/modules/groups/group-chat-channel.js';
import { groupMemberSql } from '../../src/modules/groups/index.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { useServices } from '../helpers/services.js';

/**
 * The SQL fragments of groups for other modules' statements: the one its index exports, and the
 * access SQL its chat channel hands chat's statements (group chat's store and pages).
 */
describe("the groups module's SQL fragments", () => {
  const services = useServices();

  /** A group of a new owner, with a stranger beside them. */
  const groupAndStranger = async () => {
    const { call, ctxFor, createUser } = services();
    const [owner, stranger] = [await createUser(), await createUser()];
    const group = await call('groups.create', ctxFor(owner.user), { name: `Fragment ${newId().slice(-8)}` });
    return { group, owner: owner.user.id, stranger: stranger.user.id };
  };

  /** The fragment's value for the group and user, read through its uuid parameters. */
  const fragmentValue = async <Value>(fragment: string, groupId: string, userId: string) => {
    const [row] = await executeBound<{ value: Value }>(
      services().ctxFor(null).data,
      `select ${fragment} as value`,
      [groupId, userId],
    );
    return row?.value;
  };

  it('groupMemberSql is true for a member of the group and false for anyone else or another group', async () => {
    const { group, owner, stranger } = await groupAndStranger();
    const isMember = (groupId: string, userId: string) =>
      fragmentValue<boolean>(groupMemberSql('$1::uuid', '$2::uuid'), groupId, userId);
    expect(await isMember(group.id, owner)).toBe(true);
    expect(await isMember(group.id, stranger)).toBe(false);
    expect(await isMember(newId(), owner)).toBe(false);
  });

  it('groupChatAccessSql is null for a member, not_member for anyone else, and no_group for a group that does not exist', async () => {
    const { group, owner, stranger } = await groupAndStranger();
    const access = (groupId: string, userId: string) =>
      fragmentValue<string | null>(groupChatAccessSql('$1::uuid', '$2::uuid'), groupId, userId);
    expect(await access(group.id, owner)).toBeNull();
    expect(await access(group.id, stranger)).toBe('not_member');
    expect(await access(newId(), owner)).toBe('no_group');
  });
});
