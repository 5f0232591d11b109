import type { ServerAccess } from '../../../protocol/gameservers.js';
import type { Ctx } from '../../platform/context.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { KeyedTurns } from '../../platform/keyed-turns.js';
import type { DiscoveryApi } from '../discovery/index.js';
import type { SocialApi } from '../social/index.js';
import type { WorldAccess, WorldsApi } from '../worlds/index.js';
import { blockedWithOwner, partyRestricted, refusedWithBlocksSettled, restricted } from './admission.js';
import {
  findServer,
  type GameServerRow,
  liveServerOfWorld,
  lockWorldJoins,
} from './gameservers.repository.js';
import { inviteAll } from './invitations.repository.js';
import { recordFollows } from './party-follows.js';
import {
  extendReservation,
  lockReservations,
  type PartySlot,
  type ReservationRequest,
  type ReservedSlot,
  reserveForParty,
  reserveRoomiest,
} from './reservations.repository.js';
import type { PendingLaunch, ServerLifecycle } from './server-lifecycle.js';
import type { SpawnAdmission } from './spawn-admission.js';
import type { Spawner } from './spawner.js';

/**
 * Where a join puts its caller (docs/gameservers.md, "Instance access"): a server of the world
 * with this access (public: any public server; friends or invite: one the caller owns, started
 * for them if need be), or the server it names.
 */
export type JoinTarget = { access: ServerAccess } | { serverId: string };

export interface WorldJoinAnswer {
  server_id: string;
  world_id: string;
  address: string;
}

/** How a join's caller words the refusal of a named server that is not live in the world. */
export interface JoinRefusals {
  noServer(): AppError;
}

export interface WorldJoinsDeps {
  worlds: Pick<WorldsApi, 'lookup'>;
  /** Where a join is recorded as a visit of the world, in the join's transaction. */
  visits: Pick<DiscoveryApi, 'recordVisit'>;
  /** Whether a user may cause one more server: their live servers, the node's room, their rate. */
  admission: SpawnAdmission;
  spawner: Pick<Spawner, 'stop'>;
  lifecycle: ServerLifecycle;
  /** A ready server with no players and no live reservation for this long is stopped. */
  idleStopMs: number;
  /** Blocks, read under the pair's lock where a friends or invite server's access decides (admission.ts). */
  social: Pick<SocialApi, 'holdPair' | 'relationsOf'>;
}

/** Joins re-check for a ready server this many times at most before giving up. */
const JOIN_ATTEMPTS = 5;
/**
 * How long a join reservation lasts (never longer than the idle time): long enough for a player
 * to connect and their server to report them, short enough that a player who never connects stops
 * counting soon and does not keep an empty server running for long.
 */
const RESERVATION_MS = 60_000;

const noSuchWorld = () => new AppError(ErrorCode.NOT_FOUND, 'No such world.');
const noSuchServer = () =>
  new AppError(ErrorCode.NOT_FOUND, 'No starting or ready game server of this world has this id.');
const full = () => new AppError(ErrorCode.SERVER_FULL, 'This server has no room for you.');
const noRoomForParty = () =>
  new AppError(ErrorCode.NO_ROOM_FOR_PARTY, 'This server has no room for every member of your party.');

/**
 * A party placement (docs/gameservers.md, "Joining together") as the checks before its turn left
 * it: the party is the leader's, and the members to place fit on one server.
 */
export interface PartyPlacementRequest {
  partyId: string;
  leaderId: string;
  /** The members to place, the leader included. */
  userIds: string[];
  /**
   * Those of `userIds` still in the party, held so until the placement's transaction ends
   * (PartiesApi.holdMembers): who left since the party was read is not placed.
   */
  holdMembers(tx: DataAccess, userIds: readonly string[]): Promise<Set<string>>;
  target: JoinTarget;
  /** Members to place who may not read the world: no server's access admits them. */
  unreadable: string[];
}

/** Where a party placement put the party. */
export interface PartyPlaced {
  serverId: string;
  userIds: string[];
}

/** One turn's placement of the caller, under the world's join lock, in the turn's transaction. */
type Place = (tx: DataAccess, request: Omit<ReservationRequest, 'scope'>) => Promise<Placed>;

/** What a turn's placement decided. */
interface Placed {
  /** The caller's place on a ready server. */
  slot?: { id: string; address: string };
  /** A starting server the caller holds a place on: the join waits for it, and takes another turn. */
  wait?: GameServerRow;
  launch?: PendingLaunch;
  /** A party's placement, made in this turn. */
  party?: PartyPlaced;
  /** What the next turns place instead of this turn's placement (a party's: the leader alone). */
  next?: Place;
}

/** What one turn under the world's join lock decided. */
interface JoinStep extends Placed {
  /** Starting servers past their deadline, failed in the step: ended once it committed. */
  overdue: GameServerRow[];
}

/**
 * Joins of a world: each turn runs under the world's join lock (joins of one world on this node
 * queue in memory first), so concurrent joins see each other's reservations and spawns. A turn
 * chooses the server and places the caller on it, ready or starting (the place counts at once),
 * recording a new server to start when there is none; a join on a starting server waits for it
 * and takes another turn, which finds its place held. A refusal throws inside the turn, which then
 * writes nothing. A party's placement places all its members in one turn; the leader's next turns
 * are the leader's alone, on the party's server.
 */
export class WorldJoins {
  private readonly turns = new KeyedTurns();

  constructor(private readonly deps: WorldJoinsDeps) {}

  /**
   * The address of a ready server of the world (which the caller may read) for the caller, where
   * their one reservation moves; waits for a starting server, which it may have started itself.
   */
  async join(
    ctx: Ctx,
    callerId: string,
    world: WorldAccess,
    target: JoinTarget,
    refusals: JoinRefusals = { noServer: noSuchServer },
  ): Promise<WorldJoinAnswer> {
    const place: Place = (tx, request) =>
      'serverId' in target
        ? this.placeOnServer(tx, request, target.serverId, refusals)
        : this.placeByAccess(tx, request, target.access);
    return (await this.run(ctx, callerId, world, place)).answer;
  }

  /**
   * Places the party's members on one server of the world in one turn, and answers the leader's
   * join once that server is ready (waiting for it as a join does), with where the party went.
   */
  async placeParty(
    ctx: Ctx,
    world: WorldAccess,
    party: PartyPlacementRequest,
  ): Promise<{ answer: WorldJoinAnswer; placed: PartyPlaced }> {
    const { answer, party: placed } = await this.run(ctx, party.leaderId, world, (tx, request) =>
      this.placePartyStep(tx, request, party),
    );
    return { answer, placed: placed as PartyPlaced };
  }

  /** The join's turns: each places the caller, until a place on a ready server answers. */
  private async run(
    ctx: Ctx,
    callerId: string,
    world: WorldAccess,
    first: Place,
  ): Promise<{ answer: WorldJoinAnswer; party?: PartyPlaced }> {
    let place = first;
    let party: PartyPlaced | undefined;
    for (let attempt = 0; attempt < JOIN_ATTEMPTS; attempt++) {
      const turnPlace = place;
      const step: JoinStep = await whileWorldExists(ctx, this.deps.worlds, world.id, () =>
        this.turns.run(world.id, () =>
          transaction(ctx.data, async (tx) => {
            await lockWorldJoins(tx, world.id);
            const now = ctx.now();
            const overdue = await this.deps.lifecycle.failOverdue(tx, now, world.id);
            const request = { userId: callerId, worldId: world.id, now, expiresAt: this.expiry(now) };
            return { ...(await turnPlace(tx, request)), overdue };
          }),
        ),
      );
      for (const row of step.overdue) await this.deps.lifecycle.afterEnd(row);
      party ??= step.party;
      place = step.next ?? place;
      if (step.slot)
        return {
          answer: { server_id: step.slot.id, world_id: world.id, address: step.slot.address },
          ...(party ? { party } : {}),
        };
      const pending = step.launch?.row ?? (step.wait as GameServerRow);
      if (step.launch) await this.deps.lifecycle.launch(step.launch);
      const settled = await this.deps.lifecycle.settled(ctx.data, pending);
      if (settled.status !== 'ready') {
        // Its world was deleted meanwhile, and the server's record with it: its process goes too.
        if (!(await this.deps.worlds.lookup(ctx, world.id))) {
          await this.deps.spawner.stop(pending.id);
          throw noSuchWorld();
        }
        throw new AppError(
          ErrorCode.GAMESERVER_UNAVAILABLE,
          `No game server of this world became ready: ${settled.error ?? 'it was stopped'}`,
        );
      }
    }
    throw new AppError(ErrorCode.GAMESERVER_CAPACITY, 'Every game server of this world is full; try again.');
  }

  private expiry(now: Date): Date {
    return new Date(now.getTime() + Math.min(RESERVATION_MS, this.deps.idleStopMs));
  }

  /**
   * A join by access: the caller's place on a live server of the world with that access, the one
   * they hold first. Public: any public server, a ready one with room (the fullest first), else a
   * starting one. Friends or invite: the fullest live one the caller owns with room. With none, a
   * new one the caller owns, if the spawn admission lets them cause it.
   */
  private async placeByAccess(
    tx: DataAccess,
    request: Omit<ReservationRequest, 'scope'>,
    access: ServerAccess,
  ): Promise<Placed> {
    const ownerId = access === 'public' ? null : request.userId;
    const scoped = { ...request, scope: { access, ownerId, serverId: null } };
    const placed =
      (await extendReservation(tx, scoped)) ?? (await this.reserve(tx, scoped, access === 'public'));
    if (placed) return this.outcome(tx, placed);
    const { mayTakeLastSlots } = await this.deps.admission.admit(tx, request.userId);
    const launch = await this.deps.lifecycle.insertStarting(
      tx,
      { worldId: request.worldId, ownerId: request.userId, access },
      request.now,
    );
    await this.reserve(
      tx,
      { ...request, scope: { access: null, ownerId: null, serverId: launch.row.id } },
      false,
    );
    return { launch: { ...launch, mayTakeLastSlots } };
  }

  /**
   * A join naming a server: a live server of this world, whose access admits the caller and which
   * has room for them, or holds their place already.
   */
  private async placeOnServer(
    tx: DataAccess,
    request: Omit<ReservationRequest, 'scope'>,
    serverId: string,
    refusals: JoinRefusals,
  ): Promise<Placed> {
    const server = await liveServerOfWorld(tx, serverId, request.worldId);
    if (!server) throw refusals.noServer();
    if ((await refusedWithBlocksSettled(tx, this.deps.social, server, [request.userId])).length > 0)
      throw restricted();
    const scoped = { ...request, scope: { access: null, ownerId: null, serverId: server.id } };
    const placed = (await extendReservation(tx, scoped)) ?? (await this.reserve(tx, scoped, false));
    if (!placed) throw full();
    return this.outcome(tx, placed);
  }

  /**
   * A party's placement: every member on one server in one statement (reserveForParty), the
   * members' reservations locked first so that no join elsewhere moves one of them meanwhile. With
   * a server named: that one, with room for all (409 NO_ROOM_FOR_PARTY), admitting all (403
   * INSTANCE_RESTRICTED); the refusals throw once the places are written, which the turn's
   * rollback undoes. By access: the fullest server in the scope with room for all, else a new one
   * the leader starts (the spawn admission is the leader's); on a friends or invite server the
   * members are invited. The leader's next turns take their own place on that server.
   */
  private async placePartyStep(
    tx: DataAccess,
    request: Omit<ReservationRequest, 'scope'>,
    party: PartyPlacementRequest,
  ): Promise<Placed> {
    // Who left since the party was read is not placed, and who is placed stays until this commits.
    const staying = await party.holdMembers(tx, party.userIds);
    if (!staying.has(party.leaderId)) throw new AppError(ErrorCode.NOT_IN_PARTY, 'You are in no party.');
    const userIds = party.userIds.filter((id) => staying.has(id));
    const unreadable = party.unreadable.filter((id) => staying.has(id));
    await lockReservations(tx, userIds);
    const members = { ...request, userIds: userIds };
    const onServer = (serverId: string) => ({ access: null, ownerId: null, serverId });
    let slot: PartySlot | undefined;
    let launch: PendingLaunch | undefined;
    if ('serverId' in party.target) {
      const server = await liveServerOfWorld(tx, party.target.serverId, request.worldId);
      if (!server) throw noSuchServer();
      const refused = await refusedWithBlocksSettled(tx, this.deps.social, server, userIds);
      slot = await reserveForParty(tx, { ...members, scope: onServer(server.id) });
      if (!slot) throw noRoomForParty();
      if (refused.length > 0 || unreadable.length > 0) throw partyRestricted();
    } else {
      const { access } = party.target;
      // Invited to the leader's server, a member blocked either way with the leader is refused.
      if (access !== 'public' && (await blockedWithOwner(tx, this.deps.social, party.leaderId, userIds)))
        throw partyRestricted();
      const scope = { access, ownerId: access === 'public' ? null : party.leaderId, serverId: null };
      slot = await reserveForParty(tx, { ...members, scope });
      if (!slot) {
        const { mayTakeLastSlots } = await this.deps.admission.admit(tx, party.leaderId);
        const started = await this.deps.lifecycle.insertStarting(
          tx,
          { worldId: request.worldId, ownerId: party.leaderId, access },
          request.now,
        );
        launch = { ...started, mayTakeLastSlots };
        // A new server holds GAMESERVER_MAX_PLAYERS, which the party's size was checked against.
        slot = (await reserveForParty(tx, { ...members, scope: onServer(started.row.id) })) as PartySlot;
      }
      if (access !== 'public')
        await inviteAll(tx, {
          serverId: slot.id,
          userIds: userIds.filter((id) => id !== party.leaderId),
          invitedBy: party.leaderId,
          at: request.now,
        });
    }
    // Owed once the server is ready, whoever sees it so (party-follows.ts).
    await recordFollows(tx, {
      serverId: slot.id,
      partyId: party.partyId,
      userIds: userIds.filter((id) => id !== party.leaderId),
    });
    for (const userId of slot.newcomers)
      await this.deps.visits.recordVisit(tx, {
        worldId: request.worldId,
        userId,
        serverId: slot.id,
        at: request.now,
      });
    const serverId = slot.id;
    const placed = {
      party: { serverId, userIds },
      next: (next, nextRequest) =>
        this.placeOnServer(next, nextRequest, serverId, { noServer: noSuchServer }),
    } satisfies Placed;
    return launch ? { ...placed, launch } : { ...placed, ...(await this.outcome(tx, slot)) };
  }

  /** A place on a ready server answers the join; one on a starting server is waited for. */
  private async outcome(tx: DataAccess, placed: ReservedSlot): Promise<Placed> {
    if (placed.status === 'ready' && placed.address !== null)
      return { slot: { id: placed.id, address: placed.address } };
    return { wait: (await findServer(tx, placed.id)) as GameServerRow };
  }

  /** A new place on a server in scope with room (reserveRoomiest); the visit is recorded with it. */
  private async reserve(
    tx: DataAccess,
    request: ReservationRequest,
    readyFirst: boolean,
  ): Promise<ReservedSlot | undefined> {
    const reserved = await reserveRoomiest(tx, request, readyFirst);
    if (reserved)
      await this.deps.visits.recordVisit(tx, {
        worldId: request.worldId,
        userId: request.userId,
        serverId: reserved.id,
        at: request.now,
      });
    return reserved;
  }
}

/**
 * Runs the writes of a spawn or a join. A world deleted after it was read makes one of them fail
 * its foreign key (the world's, or a server's that went with it), which happens only once the
 * deletion committed: the caller then gets 404, as after the deletion, and nothing was written.
 */
export async function whileWorldExists<T>(
  ctx: Ctx,
  worlds: Pick<WorldsApi, 'lookup'>,
  worldId: string,
  writes: () => Promise<T>,
): Promise<T> {
  try {
    return await writes();
  } catch (error) {
    if (!hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)) throw error;
    if (!(await worlds.lookup(ctx, worldId))) throw noSuchWorld();
    throw error;
  }
}
