import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { SocialApi } from '../social/index.js';
import { refusedByAccess } from './invitations.repository.js';

/**
 * Instance access decided against blocks being written (docs/gameservers.md, "Instance access"):
 * a friends or invite server refuses a user blocked either way with its owner, and a join's
 * transaction reads the blocks while a block of the pair may be committing. Each check below
 * first holds the pair lock of the owner and each user, shared (SocialApi.holdPair, the lock a
 * block takes alone), until the join's transaction ends: a block under way is waited for and
 * then seen, so the join is refused; a block that comes later waits for the join to commit, and
 * refuses the joins after it (a place already held stays: the contract's block takes what the
 * access admits from then on). Public servers look at no block, and take no lock.
 */

export type PairHolder = Pick<SocialApi, 'holdPair'>;

/** A join its server's access refuses. */
export const restricted = () =>
  new AppError(ErrorCode.INSTANCE_RESTRICTED, "This server's access does not admit you.");
/** A party placement whose server's access refuses one of the members. */
export const partyRestricted = () =>
  new AppError(
    ErrorCode.INSTANCE_RESTRICTED,
    "This server's access does not admit every member of your party.",
  );

/** Holds the pair of `ownerId` and each other user, in one order whatever the caller's. */
async function holdPairs(
  tx: DataAccess,
  social: PairHolder,
  ownerId: string,
  userIds: readonly string[],
): Promise<void> {
  for (const userId of [...new Set(userIds)].filter((id) => id !== ownerId).sort())
    await social.holdPair(tx, ownerId, userId);
}

/** The users among `userIds` the server's access refuses (refusedByAccess), blocks settled first. */
export async function refusedWithBlocksSettled(
  tx: DataAccess,
  social: PairHolder,
  server: { id: string; access: string; requested_by: string | null },
  userIds: readonly string[],
): Promise<string[]> {
  if (server.access !== 'public' && server.requested_by !== null)
    await holdPairs(tx, social, server.requested_by, userIds);
  return refusedByAccess(tx, server.id, userIds);
}

/**
 * Whether a block stands between `ownerId` and one of `userIds`, blocks settled first: a party
 * placed on a friends or invite server its leader owns is refused for a member blocked either way
 * with the leader, whom no invitation would let in.
 */
export async function blockedWithOwner(
  tx: DataAccess,
  social: PairHolder & Pick<SocialApi, 'relationsOf'>,
  ownerId: string,
  userIds: readonly string[],
): Promise<boolean> {
  const others = userIds.filter((id) => id !== ownerId);
  if (others.length === 0) return false;
  await holdPairs(tx, social, ownerId, others);
  const relations = await social.relationsOf(tx, ownerId, others);
  return [...relations.values()].some((relation) => relation.blocked);
}
