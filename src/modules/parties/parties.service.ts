import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { PARTY_SIZE_DEFAULT, type Party, type PartyInvite } from '../../../protocol/parties.js';
import { type Ctx, callerOf, requireRole } from '../../platform/context.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId, newId } from '../../platform/ids.js';
import { consumeOrThrow } from '../../platform/rate-limit.js';
import type { SocialApi } from '../social/index.js';
import type { UsersApi } from '../users/index.js';
import {
  deleteInvite,
  insertMember,
  insertParty,
  joinFacts,
  lockParty,
  lockUserParties,
  type PartyRow,
  partyIdOfMember,
  partyMemberIds,
  partyRoster,
  setLeader,
  updateSettings,
  upsertInvite,
} from './parties.repository.js';
import { depart } from './party-departures.js';
import type { PartyEvents } from './party-events.js';
import {
  alreadyInParty,
  forbidden,
  noSuchParty,
  notAMember,
  notYourself,
  partyIdOf,
  toParty,
} from './party-views.js';

export interface PartiesDeps {
  events: PartyEvents;
  users: Pick<UsersApi, 'usernamesOf'>;
  relations: Pick<SocialApi, 'relationsOf'>;
  /** Invitations per inviter and window (SOCIAL_RATE_LIMIT_*), counted apart from friend requests. */
  inviteLimiter: RateLimiterAbstract;
  /** PARTY_INVITE_TTL_SECONDS: how long an invitation stays pending. */
  inviteTtlSeconds: number;
}

type Settings = { open?: boolean | undefined; max_size?: number | undefined };

const noSuchUser = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');
const accountGone = () => new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
const leaderOnly = (what: string) => forbidden(`Only the party's leader ${what}.`);

/** The id a path names as a member: the member's canonical id, or 404 when it names no member. */
function memberAmong(memberIds: readonly string[], userId: string): string {
  const id = isId(userId) ? canonicalId(userId) : undefined;
  if (id === undefined || !memberIds.includes(id)) throw notAMember();
  return id;
}

/**
 * The rules of parties (docs/parties.md). Every change runs in one transaction holding the
 * party's row lock, so the members, the leader and the size it checks hold until it commits; a
 * create or join first takes the caller's own lock, so one user's creates and joins take turns.
 * Events go out after the commit, on the users' own topics.
 */
export class PartiesService {
  constructor(private readonly deps: PartiesDeps) {}

  async create(ctx: Ctx, settings: Settings = {}): Promise<Party> {
    const me = callerOf(ctx).id;
    return this.asUser(ctx, me, async (tx) => {
      if ((await partyIdOfMember(tx, me)) !== undefined) throw alreadyInParty();
      const id = newId();
      await insertParty(tx, {
        id,
        leaderId: me,
        open: settings.open ?? false,
        maxSize: settings.max_size ?? PARTY_SIZE_DEFAULT,
        at: ctx.now(),
      });
      return this.view(tx, id);
    });
  }

  /** The caller's party; 404 when they are in none. */
  async mine(ctx: Ctx): Promise<Party> {
    const party = await this.partyOf(ctx.data, callerOf(ctx).id);
    if (!party) throw new AppError(ErrorCode.NOT_FOUND, 'You are in no party.');
    return party;
  }

  /** Staff: the party a user is in (the console's account page); 404 when they are in none. */
  async ofUserForStaff(ctx: Ctx, userId: string): Promise<Party> {
    requireRole(ctx, 'moderator', "Only moderators and admins read a user's party.");
    const party = isId(userId) ? await this.partyOf(ctx.data, canonicalId(userId)) : undefined;
    if (!party) throw new AppError(ErrorCode.NOT_FOUND, 'This user is in no party.');
    return party;
  }

  /** The party `userId` is in, as its members see it; undefined when they are in none. */
  async partyOf(data: DataAccess, userId: string): Promise<Party | undefined> {
    const partyId = await partyIdOfMember(data, userId);
    const roster = partyId === undefined ? undefined : await partyRoster(data, partyId);
    // Read in two statements: the user may have left between them.
    if (!roster?.members.some((member) => member.user_id === userId)) return undefined;
    return toParty(roster);
  }

  async get(ctx: Ctx, partyId: string): Promise<Party> {
    const me = callerOf(ctx).id;
    const roster = await partyRoster(ctx.data, partyIdOf(partyId));
    if (!roster?.members.some((member) => member.user_id === me)) throw noSuchParty();
    return toParty(roster);
  }

  async update(ctx: Ctx, partyId: string, change: Settings): Promise<Party> {
    if (change.open === undefined && change.max_size === undefined)
      throw new AppError(ErrorCode.VALIDATION_FAILED, 'Send at least one of open and max_size.');
    const party = await this.asLeader(ctx, partyId, 'changes its settings', async (tx, row, memberIds) => {
      if (change.max_size !== undefined && change.max_size < memberIds.length)
        throw new AppError(
          ErrorCode.CONFLICT,
          `The party has ${memberIds.length} members: max_size cannot go below that.`,
        );
      await updateSettings(tx, row.id, { open: change.open, maxSize: change.max_size });
      return this.view(tx, row.id);
    });
    await this.deps.events.updated(ctx.log, party);
    return party;
  }

  async setLeader(ctx: Ctx, partyId: string, userId: string): Promise<Party> {
    const me = callerOf(ctx).id;
    const party = await this.asLeader(ctx, partyId, 'hands leadership on', async (tx, row, memberIds) => {
      const target = memberAmong(memberIds, userId);
      if (target === me) throw notYourself('You lead the party already: name another member.');
      await setLeader(tx, row.id, target);
      return this.view(tx, row.id);
    });
    await this.deps.events.updated(ctx.log, party);
    return party;
  }

  async kick(ctx: Ctx, partyId: string, userId: string): Promise<void> {
    const me = callerOf(ctx).id;
    const departure = await this.asLeader(ctx, partyId, 'removes members', async (tx, row, memberIds) => {
      const target = memberAmong(memberIds, userId);
      if (target === me) throw notYourself('The leader does not kick themselves: leave instead.');
      return depart(tx, row, target);
    });
    if (departure) await this.deps.events.departed(ctx.log, departure);
  }

  async leave(ctx: Ctx, partyId: string): Promise<void> {
    const me = callerOf(ctx).id;
    const id = partyIdOf(partyId);
    const departure = await transaction(ctx.data, async (tx) => {
      const party = await lockParty(tx, id);
      const left = party && (await depart(tx, party, me));
      if (!left) throw noSuchParty();
      return left;
    });
    await this.deps.events.departed(ctx.log, departure);
  }

  /**
   * Joins the party, checked in the contract's order: a member already (409), neither open nor
   * holding a pending invitation (404: a closed party is not revealed), in another party (409), a
   * block either way with a member (403), full (409 PARTY_FULL). A refusal writes nothing.
   */
  async join(ctx: Ctx, partyId: string): Promise<Party> {
    const me = callerOf(ctx).id;
    const id = partyIdOf(partyId);
    const party = await this.asUser(ctx, me, async (tx) => {
      const row = await lockParty(tx, id);
      if (!row) throw noSuchParty();
      const facts = await joinFacts(tx, id, me, ctx.now());
      if (facts.current_party === id) throw alreadyInParty();
      if (!row.open && !facts.invited) throw noSuchParty();
      if (facts.current_party !== null) throw alreadyInParty();
      if (facts.blocked) throw forbidden('A block between you and a member of this party stands in the way.');
      if (facts.member_count >= row.max_size)
        throw new AppError(ErrorCode.PARTY_FULL, `The party has its ${row.max_size} members.`);
      await insertMember(tx, id, me, ctx.now());
      if (facts.invited) await deleteInvite(tx, id, me);
      return this.view(tx, id);
    });
    await this.deps.events.updated(ctx.log, party);
    return party;
  }

  /**
   * Invites a user, or renews their invitation: any member of an open party, only the leader of a
   * closed one. The invitee's refusals come in the contract's order (yourself 422, unknown 404, a
   * member 409 CONFLICT, a block either way 403); the rate is spent only by an invitation written.
   */
  async invite(ctx: Ctx, partyId: string, userId: string): Promise<PartyInvite> {
    const me = callerOf(ctx).id;
    const id = partyIdOf(partyId);
    const { invite, from } = await this.translated(
      () =>
        transaction(ctx.data, async (tx) => {
          const party = await lockParty(tx, id);
          const memberIds = party ? await partyMemberIds(tx, id) : [];
          if (!party || !memberIds.includes(me)) throw noSuchParty();
          if (!party.open && party.leader_id !== me) throw leaderOnly('invites to a closed party');
          if (!isId(userId)) throw noSuchUser();
          const invitee = canonicalId(userId);
          if (invitee === me) throw notYourself('You are in the party already.');
          const users = await this.deps.users.usernamesOf(tx, [me, invitee]);
          const inviter = users.find((user) => user.id === me);
          if (!inviter) throw accountGone();
          if (!users.some((user) => user.id === invitee)) throw noSuchUser();
          if (memberIds.includes(invitee))
            throw new AppError(ErrorCode.CONFLICT, 'This user is a member of the party already.');
          if ((await this.deps.relations.relationsOf(tx, me, [invitee])).get(invitee)?.blocked)
            throw forbidden('A block between you and this user stands in the way.');
          await consumeOrThrow(
            this.deps.inviteLimiter,
            me,
            'Too many party invitations; wait before sending more.',
          );
          const at = ctx.now();
          const expires = new Date(at.getTime() + this.deps.inviteTtlSeconds * 1000);
          const row = await upsertInvite(tx, {
            party_id: id,
            user_id: invitee,
            invited_by: me,
            created_at: at,
            expires_at: expires,
          });
          return { invite: row, from: inviter };
        }),
      { foreignKey: noSuchUser },
    );
    const answer: PartyInvite = {
      party_id: invite.party_id,
      user_id: invite.user_id,
      invited_by: invite.invited_by,
      created_at: invite.created_at.toISOString(),
      expires_at: invite.expires_at.toISOString(),
    };
    await this.deps.events.invited(ctx.log, answer.user_id, {
      party_id: answer.party_id,
      from: { user_id: from.id, username: from.username },
      expires_at: answer.expires_at,
    });
    return answer;
  }

  /** The party as its members see it, read in `data` (inside the change's transaction). */
  private async view(data: DataAccess, partyId: string): Promise<Party> {
    const roster = await partyRoster(data, partyId);
    if (!roster) throw new Error('the party written in this transaction is gone');
    return toParty(roster);
  }

  /**
   * Runs `work` in a transaction holding the caller's own lock (their creates, joins and account
   * deletion take turns). A second membership the unique index refused is ALREADY_IN_PARTY; an
   * account deleted meanwhile cannot join anything.
   */
  private asUser<T>(ctx: Ctx, me: string, work: (tx: DataAccess) => Promise<T>): Promise<T> {
    return this.translated(
      () =>
        transaction(ctx.data, async (tx) => {
          await lockUserParties(tx, me);
          return work(tx);
        }),
      { foreignKey: accountGone },
    );
  }

  /**
   * Runs `work` in a transaction holding the party's row lock, for its leader alone: 404 for
   * anyone but a member (as for an unknown id), 403 for a member who does not lead it.
   */
  private asLeader<T>(
    ctx: Ctx,
    partyId: string,
    what: string,
    work: (tx: DataAccess, party: PartyRow, memberIds: string[]) => Promise<T>,
  ): Promise<T> {
    const me = callerOf(ctx).id;
    const id = partyIdOf(partyId);
    return transaction(ctx.data, async (tx) => {
      const party = await lockParty(tx, id);
      const memberIds = party ? await partyMemberIds(tx, id) : [];
      if (!party || !memberIds.includes(me)) throw noSuchParty();
      if (party.leader_id !== me) throw leaderOnly(what);
      return work(tx, party, memberIds);
    });
  }

  /** Turns the constraint violations a write can meet into the refusals they stand for. */
  private async translated<T>(run: () => Promise<T>, refusals: { foreignKey: () => AppError }): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (hasSqlState(error, SqlState.UNIQUE_VIOLATION)) throw alreadyInParty();
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)) throw refusals.foreignKey();
      throw error;
    }
  }
}
