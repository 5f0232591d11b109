import type { DataAccess } from '../../platform/data-access.js';
import {
  deleteMember,
  deleteParty,
  lockParty,
  lockUserParties,
  type PartyRow,
  partyIdOfMember,
  partyMemberIds,
  partyRoster,
  setLeader,
} from './parties.repository.js';
import type { Departure } from './party-events.js';
import { toParty } from './party-views.js';

/**
 * Removes `userId` from `party`, whose row the caller locked in `tx`: a leave, a kick, an offline
 * removal and an account deletion all end a membership this one way. A leaving leader's place
 * goes to the longest-standing remaining member; the last member's departure ends the party (its
 * invitations go with it). With `offlineBy`, only a member offline since then at the latest is
 * removed. Undefined when the user was not (or no longer) a member: someone else removed them.
 */
export async function depart(
  tx: DataAccess,
  party: PartyRow,
  userId: string,
  offlineBy: Date | null = null,
): Promise<Departure | undefined> {
  if (!(await deleteMember(tx, party.id, userId, offlineBy))) return undefined;
  const [successor] = await partyMemberIds(tx, party.id);
  if (successor === undefined) {
    await deleteParty(tx, party.id);
    return { ended: true, userId, partyId: party.id };
  }
  if (party.leader_id === userId) await setLeader(tx, party.id, successor);
  const roster = await partyRoster(tx, party.id);
  if (!roster) throw new Error('the locked party is gone');
  return { ended: false, userId, party: toParty(roster) };
}

/**
 * Removes the user from whichever party they are in, in `tx` (an account's deletion): their own
 * creates and joins wait for it, so the party read is still theirs once its row is locked.
 */
export async function departFromOwnParty(tx: DataAccess, userId: string): Promise<Departure | undefined> {
  await lockUserParties(tx, userId);
  const partyId = await partyIdOfMember(tx, userId);
  if (partyId === undefined) return undefined;
  const party = await lockParty(tx, partyId);
  return party ? depart(tx, party, userId) : undefined;
}
