import type { Party } from '../../../protocol/parties.js';
import {
  adminPartiesOfUser,
  chatPartyHistory,
  chatSendToParty,
  partiesCreate,
  partiesGet,
  partiesInvite,
  partiesJoin,
  partiesKick,
  partiesLeave,
  partiesMine,
  partiesSetLeader,
  partiesUpdate,
} from '../../../protocol/parties.js';
import type { DataAccess } from '../../platform/data-access.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { AccountApi } from '../account/index.js';
import type { ChatApi } from '../chat/index.js';
import type { PresenceApi } from '../presence/index.js';
import type { SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import { OfflineSweep } from './offline-sweep.js';
import { holdMembers } from './parties.repository.js';
import { PartiesService } from './parties.service.js';
import { partyChatChannel } from './party-chat-channel.js';
import { departFromOwnParty } from './party-departures.js';
import { PartyEvents } from './party-events.js';

/**
 * What other modules may use of parties: the party a user is in, for rules that act on a whole
 * party (a leader placing their party on one game server) or on its members (the party's chat).
 */
export interface PartiesApi {
  /**
   * The party `userId` is in, as its members see it: `leader_id` (one of the members) and
   * `members` longest-standing first; undefined when they are in none. Read in `data` (a caller's
   * transaction, or the root handle), without locking the party.
   */
  partyOf(data: DataAccess, userId: string): Promise<Party | undefined>;
  /**
   * Those of `userIds` still members of the party, in the caller's transaction `tx`, held so until
   * it ends: their leave, kick or offline removal waits (a placement of the party's members puts no
   * one who left meanwhile on its server).
   */
  holdMembers(tx: DataAccess, partyId: string, userIds: readonly string[]): Promise<Set<string>>;
}

/** Parties: a leader and members, invitations, and offline members' removal (docs/parties.md). */
export const partiesModule = defineModule({
  name: 'parties',
  tables: ['parties', 'party_members', 'party_invites'],
  needs: ['users', 'social', 'presence', 'account', 'chat'],
  setup(
    { bus, kv, config, log, db },
    {
      users,
      social,
      presence,
      account,
      chat,
    }: { users: UsersApi; social: SocialApi; presence: PresenceApi; account: AccountApi; chat: ChatApi },
  ) {
    const events = new PartyEvents(bus);
    const parties = new PartiesService({
      events,
      users,
      relations: social,
      inviteLimiter: createLimiter(kv, {
        keyPrefix: 'party-invite',
        points: config.SOCIAL_RATE_LIMIT_COUNT,
        durationSeconds: config.SOCIAL_RATE_LIMIT_WINDOW_SECONDS,
      }),
      inviteTtlSeconds: config.PARTY_INVITE_TTL_SECONDS,
    });
    const sweep = new OfflineSweep({
      data: () => db.data,
      kv,
      presence,
      events,
      log,
      graceSeconds: config.PARTY_OFFLINE_GRACE_SECONDS,
      clock: () => new Date(),
    });
    // The sweep hears of each user whose presence ends, so it need not read every member's.
    presence.onWentOffline((userId) => sweep.wentOffline(userId));
    // A deleted account leaves its party as a leave does, in the deletion's transaction.
    account.onDeletion(async (ctx, tx, userId) => {
      const departure = await departFromOwnParty(tx, userId);
      return departure && (() => events.departed(ctx.log, departure));
    });
    // The party's chat takes chat's pipeline, with this module's resolver deciding who may use it.
    const partyChat = chat.channelKind(partyChatChannel);
    const api: PartiesApi = {
      partyOf: (data, userId) => parties.partyOf(data, userId),
      holdMembers: (tx, partyId, userIds) => holdMembers(tx, partyId, userIds),
    };
    return {
      api,
      start: async () => sweep.start(),
      stop: () => sweep.stop(),
      operations: [
        serve(partiesCreate, (ctx, settings) => parties.create(ctx, settings)),
        serve(partiesMine, (ctx) => parties.mine(ctx)),
        serve(partiesGet, (ctx, { party_id }) => parties.get(ctx, party_id)),
        serve(partiesUpdate, (ctx, { party_id, ...change }) => parties.update(ctx, party_id, change)),
        serve(partiesInvite, (ctx, { party_id, user_id }) => parties.invite(ctx, party_id, user_id)),
        serve(partiesJoin, (ctx, { party_id }) => parties.join(ctx, party_id)),
        serve(partiesLeave, async (ctx, { party_id }) => {
          await parties.leave(ctx, party_id);
          return null;
        }),
        serve(partiesKick, async (ctx, { party_id, user_id }) => {
          await parties.kick(ctx, party_id, user_id);
          return null;
        }),
        serve(partiesSetLeader, (ctx, { party_id, user_id }) => parties.setLeader(ctx, party_id, user_id)),
        serve(adminPartiesOfUser, (ctx, { user_id }) => parties.ofUserForStaff(ctx, user_id)),
        serve(chatSendToParty, (ctx, { party_id, body }) => partyChat.send(ctx, { party_id }, body)),
        serve(chatPartyHistory, (ctx, { party_id, ...page }) => partyChat.history(ctx, { party_id }, page)),
      ],
    };
  },
});
