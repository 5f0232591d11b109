import type { PartyPlacement } from '../../../protocol/gameservers.js';
import type { EventBus } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { PartiesApi } from '../parties/index.js';
import type { PresenceApi } from '../presence/index.js';
import type { WorldAccess } from '../worlds/index.js';
import { sendFollows, takeSettledFollows } from './party-follows.js';
import type { JoinTarget, WorldJoinAnswer, WorldJoins } from './world-join.js';

export interface PartyJoinDeps {
  joins: Pick<WorldJoins, 'placeParty'>;
  parties: Pick<PartiesApi, 'partyOf' | 'holdMembers'>;
  presence: Pick<PresenceApi, 'online'>;
  bus: EventBus;
  /** GAMESERVER_MAX_PLAYERS: a party with more members to place is never split over servers. */
  maxPlayers: number;
}

const restricted = () =>
  new AppError(
    ErrorCode.INSTANCE_RESTRICTED,
    'No server of this access admits every member of your party: one may not read the world.',
  );

/**
 * Joining a world together (docs/gameservers.md, "Joining together"): the leader takes the party's
 * members who are online now to one server, checked in the contract's order with nothing written
 * on refusal: in no party 409 NOT_IN_PARTY, not its leader 403 FORBIDDEN, more members to place
 * than a server holds 409 NO_ROOM_FOR_PARTY; then, by access, a member no server of that access
 * could admit 403 INSTANCE_RESTRICTED (with a server named, its room and access are checked in
 * the placement's turn). Once the server is ready, the other placed members get `party.follow`
 * (party-follows.ts), whichever node sees it ready.
 */
export class PartyJoins {
  constructor(private readonly deps: PartyJoinDeps) {}

  async join(
    ctx: Ctx,
    world: WorldAccess,
    target: JoinTarget,
  ): Promise<WorldJoinAnswer & { party_placement: PartyPlacement }> {
    const leaderId = callerOf(ctx).id;
    const party = await this.deps.parties.partyOf(ctx.data, leaderId);
    if (!party) throw new AppError(ErrorCode.NOT_IN_PARTY, 'You are in no party.');
    if (party.leader_id !== leaderId)
      throw new AppError(ErrorCode.FORBIDDEN, 'Only the leader takes the party into a world.');
    // Online whatever their presence_visibility: the placement acts on presence, it shows nothing.
    const memberIds = party.members.map((member) => member.user_id);
    const online = await this.deps.presence.online(memberIds.filter((id) => id !== leaderId));
    const userIds = memberIds.filter((id) => id === leaderId || online.has(id));
    if (userIds.length > this.deps.maxPlayers)
      throw new AppError(
        ErrorCode.NO_ROOM_FOR_PARTY,
        `Your party has ${userIds.length} members online; a server holds ${this.deps.maxPlayers}.`,
      );
    // Every server's access starts from the world's rule: a private world is its owner's alone.
    const unreadable = world.visibility === 'private' ? userIds.filter((id) => id !== world.ownerId) : [];
    // A member blocked with the leader is refused in the placement's turn, under the pair's lock.
    if ('access' in target && unreadable.length > 0) throw restricted();
    const { answer, placed } = await this.deps.joins.placeParty(ctx, world, {
      partyId: party.id,
      leaderId,
      userIds,
      holdMembers: (tx, ids) => this.deps.parties.holdMembers(tx, party.id, ids),
      target,
      unreadable,
    });
    // The server is ready: the follows its ready report did not take (it was ready already, or
    // became so before the placement committed) are sent now.
    await sendFollows(this.deps.bus, ctx.log, await takeSettledFollows(ctx.data, placed.serverId));
    return { ...answer, party_placement: { server_id: placed.serverId, user_ids: placed.userIds } };
  }
}
