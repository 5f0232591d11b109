import type { Party } from '../../../protocol/parties.js';
import { timeOfKey } from '../../platform/cursor.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { PartyRoster } from './parties.repository.js';

/** What the party services share: the view of a party, and the refusals. */

export const toParty = (roster: PartyRoster): Party => ({
  id: roster.id,
  leader_id: roster.leader_id,
  open: roster.open,
  max_size: roster.max_size,
  members: roster.members.map((member) => ({
    user_id: member.user_id,
    username: member.username ?? '',
    joined_at: timeOfKey(member.joined_key),
  })),
  created_at: roster.created_at.toISOString(),
});

/** A party is visible to its members alone: anyone else is told what an unknown id tells. */
export const noSuchParty = () => new AppError(ErrorCode.NOT_FOUND, 'No such party.');
export const notAMember = () => new AppError(ErrorCode.NOT_FOUND, 'This user is not a member of the party.');
export const alreadyInParty = () =>
  new AppError(ErrorCode.ALREADY_IN_PARTY, 'You are in a party already: leave it first.');
export const forbidden = (detail: string) => new AppError(ErrorCode.FORBIDDEN, detail);

/** The caller named themselves where another user belongs (a kick, a handover, an invitation). */
export const notYourself = (detail: string) =>
  new AppError(ErrorCode.VALIDATION_FAILED, detail, {
    errors: [{ path: 'user_id', message: 'must be another user' }],
  });

/** The canonical id of a party; an id that cannot name one answers 404 as an unknown one does. */
export function partyIdOf(partyId: string): string {
  if (!isId(partyId)) throw noSuchParty();
  return canonicalId(partyId);
}

/** The canonical id of a user named as a member; one that cannot name a user is not a member (404). */
export function memberIdOf(userId: string): string {
  if (!isId(userId)) throw notAMember();
  return canonicalId(userId);
}
