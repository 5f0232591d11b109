import type { AdminGameServer, GameServer, GameServerStatusFilter } from '../../../protocol/gameservers.js';
import type { AuthUser } from '../../platform/auth/access-tokens.js';
import type { ServicePrincipal } from '../../platform/auth/service-tokens.js';
import { type Ctx, callerOf, hasRole, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import { KeyedTurns } from '../../platform/keyed-turns.js';
import type { AuditApi } from '../audit/index.js';
import type { DiscoveryApi } from '../discovery/index.js';
import type { WorldAccess, WorldsApi } from '../worlds/index.js';
import {
  adminServersPage,
  applyReport,
  endServer,
  findServer,
  type GameServerRow,
  idleServers,
  lockWorldJoins,
  serverOfToken,
  startingServer,
  stopIfIdle,
} from './gameservers.repository.js';
import {
  extendReservation,
  freshReservations,
  type ReservedSlot,
  reserveRoomiest,
} from './reservations.repository.js';
import { ServerLifecycle, type ServerLifecycleDeps } from './server-lifecycle.js';
import { hashServerToken, looksLikeServerToken } from './server-tokens.js';
import { serverView } from './server-view.js';
import type { SpawnAdmission } from './spawn-admission.js';

export interface GameServersDeps extends ServerLifecycleDeps {
  worlds: WorldsApi;
  /** Where a join is recorded as a visit of the world, in the join's transaction. */
  visits: Pick<DiscoveryApi, 'recordVisit'>;
  /** Whether a user may cause one more server: their live servers, the node's room, their rate. */
  admission: SpawnAdmission;
  /** A ready server with no players and no live reservation for this long is stopped. */
  idleStopMs: number;
  /** An admin's start or stop of a server of someone else's world is recorded in the audit log. */
  audit: Pick<AuditApi, 'record'>;
}

/** Joins re-check for a ready server this many times at most before giving up. */
const JOIN_ATTEMPTS = 5;
/**
 * How long a join reservation lasts (never longer than the idle time): long enough for a player
 * to connect and their server to report them, short enough that a player who never connects stops
 * counting soon and does not keep an empty server running for long.
 */
const RESERVATION_MS = 60_000;

const notFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such game server.');
const noSuchWorld = () => new AppError(ErrorCode.NOT_FOUND, 'No such world.');
const tokenDead = () =>
  new AppError(ErrorCode.UNAUTHENTICATED, 'The server token is invalid, or its server has ended.');

/**
 * Game servers (docs/gameservers.md): their records, tokens and states. The spawner runs them; this
 * service decides. A server is `starting` until it reports ready itself (or Agones says Ready),
 * `failed` when it misses its deadline, crashes or cannot be launched, `stopped` when asked to,
 * when it exits cleanly or when it has been idle too long. Ending a server clears its token hash,
 * which is what revokes the token. Users hold one join reservation each, and the spawns they cause
 * pass the spawn admission (spawn-admission.ts).
 */
export class GameServersService {
  private readonly lifecycle: ServerLifecycle;
  /** Joins of one world on this node take turns here before they take the world's lock. */
  private readonly joinTurns = new KeyedTurns();

  constructor(private readonly deps: GameServersDeps) {
    this.lifecycle = new ServerLifecycle(deps);
  }

  /** The server token check: the live server a token belongs to, scoped to its world. */
  async principalOf(ctx: Ctx, token: string): Promise<ServicePrincipal> {
    if (!looksLikeServerToken(token)) throw tokenDead();
    const server = await serverOfToken(ctx.data, hashServerToken(token), ctx.now());
    if (!server) throw tokenDead();
    return { id: server.id, scope: server.world_id };
  }

  async spawn(ctx: Ctx, worldId: string): Promise<GameServer> {
    const caller = callerOf(ctx);
    const world = await this.managedWorld(ctx, caller, worldId);
    const spawn = await this.whileWorldExists(ctx, world.id, () =>
      transaction(ctx.data, async (tx) => {
        const { mayTakeLastSlots } = await this.deps.admission.admit(tx, caller.id);
        const started = await this.lifecycle.insertStarting(tx, world.id, caller.id, ctx.now());
        // An admin starting a server of someone else's world acts as an admin, as a stop does.
        if (world.ownerId !== caller.id)
          await this.deps.audit.record(tx, {
            actor: { kind: 'user', id: caller.id },
            action: 'gameservers.spawn',
            target: { type: 'game_server', id: started.row.id },
            after: { status: started.row.status, world_id: world.id },
          });
        return { ...started, mayTakeLastSlots };
      }),
    );
    await this.lifecycle.launch(spawn);
    return serverView(spawn.row);
  }

  async get(ctx: Ctx, serverId: string): Promise<GameServer> {
    const caller = callerOf(ctx);
    const row = await this.visibleServer(ctx, caller, serverId);
    return serverView(row, await freshReservations(ctx.data, row.id, ctx.now()));
  }

  /** Every server, newest first, ended ones included: admins only (docs/gameservers.md, "Administration"). */
  async adminList(
    ctx: Ctx,
    query: {
      status?: GameServerStatusFilter | undefined;
      world_id?: string | undefined;
      limit: number;
      cursor?: string | undefined;
    },
  ): Promise<{ items: AdminGameServer[]; next_cursor: string | null }> {
    requireRole(ctx, 'admin', 'Only admins list every game server.');
    if (query.world_id !== undefined && !isId(query.world_id))
      throw new AppError(ErrorCode.VALIDATION_FAILED, 'world_id: must be a world id', {
        errors: [{ path: 'world_id', message: 'must be a world id' }],
      });
    const before = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await adminServersPage(
      ctx.data,
      {
        status: query.status,
        worldId: query.world_id === undefined ? undefined : canonicalId(query.world_id),
      },
      { before, limit: query.limit + 1 },
    );
    return pageFrom(
      rows,
      query.limit,
      (row) => ({ ...serverView(row), requested_by: row.requested_by, world_owner_id: row.world_owner_id }),
      (row) => [row.created_key, row.id],
    );
  }

  /** Stops a server; an ended one stays as it is (the call is idempotent). */
  async stop(ctx: Ctx, serverId: string): Promise<void> {
    const caller = callerOf(ctx);
    const row = await this.visibleServer(ctx, caller, serverId);
    const byOwner = (await this.deps.worlds.lookup(ctx, row.world_id))?.ownerId === caller.id;
    if (!byOwner && !hasRole(caller, 'admin'))
      throw new AppError(ErrorCode.FORBIDDEN, "Only the world's owner or an admin can stop its servers.");
    // An admin stopping someone else's server acts as an admin: the audit log records it.
    const ended = await transaction(ctx.data, async (tx) => {
      const stopped = await endServer(tx, row.id, { status: 'stopped', error: null, at: ctx.now() });
      if (stopped && !byOwner)
        await this.deps.audit.record(tx, {
          actor: { kind: 'user', id: caller.id },
          action: 'gameservers.stop',
          target: { type: 'game_server', id: row.id },
          before: { status: row.status, world_id: row.world_id },
          after: { status: 'stopped' },
        });
      return stopped;
    });
    if (ended) await this.lifecycle.afterEnd(ended);
  }

  /** A server's report on itself through the internal API. */
  async report(
    ctx: Ctx,
    report: { ready: boolean; address?: string | undefined; players?: number | undefined },
  ): Promise<GameServer> {
    const server = ctx.service;
    if (!server) throw tokenDead();
    if (report.ready && report.address === undefined) {
      const message = 'is required with ready: true';
      throw new AppError(ErrorCode.VALIDATION_FAILED, `address ${message}`, {
        errors: [{ path: 'address', message }],
      });
    }
    const row = await applyReport(
      ctx.data,
      server.id,
      { ready: report.ready, address: report.address ?? null, players: report.players ?? null },
      ctx.now(),
    );
    if (!row) throw tokenDead();
    if (report.ready) this.lifecycle.clearDeadline(row.id);
    await this.lifecycle.publishStatus(row);
    return serverView(row);
  }

  /**
   * The address of a ready server of the world for the caller: the one they hold a reservation on,
   * or the fullest with room, where their one reservation moves. Without one, the join waits for a
   * starting server, or starts one if the caller may (spawn admission); joins of a world take turns
   * on a lock, so concurrent joins share one spawn.
   */
  async join(ctx: Ctx, worldId: string): Promise<{ server_id: string; world_id: string; address: string }> {
    const caller = callerOf(ctx);
    const world = await this.deps.worlds.readable(ctx, worldId);
    for (let attempt = 0; attempt < JOIN_ATTEMPTS; attempt++) {
      const step = await this.whileWorldExists(ctx, world.id, () =>
        this.joinTurns.run(world.id, () =>
          transaction(ctx.data, async (tx) => {
            await lockWorldJoins(tx, world.id);
            const now = ctx.now();
            const overdue = await this.lifecycle.failOverdue(tx, now, world.id);
            const { slot, starting } = await this.reserve(tx, caller.id, world.id, now);
            if (slot) return { slot, overdue };
            if (starting) return { wait: starting, overdue };
            const { mayTakeLastSlots } = await this.deps.admission.admit(tx, caller.id);
            const launch = await this.lifecycle.insertStarting(tx, world.id, caller.id, now);
            return { launch: { ...launch, mayTakeLastSlots }, overdue };
          }),
        ),
      );
      for (const row of step.overdue) await this.lifecycle.afterEnd(row);
      if (step.slot) return { server_id: step.slot.id, world_id: world.id, address: step.slot.address };
      const pending = step.launch?.row ?? (step.wait as GameServerRow);
      if (step.launch) await this.lifecycle.launch(step.launch);
      const settled = await this.lifecycle.settled(ctx.data, pending);
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

  /**
   * Stops the ready servers with no players and no live reservation for the idle time before
   * `now`, as a stop through the API would (token, sockets, process); returns the ones this call
   * stopped. Each stop is checked again under its world's join lock, so a join that reserves a
   * place on the server first keeps it running, and of several nodes sweeping one stops it.
   */
  async stopIdle(now: Date): Promise<string[]> {
    const data = this.deps.systemData();
    const since = new Date(now.getTime() - this.deps.idleStopMs);
    const error = `The server had no players and no join reservation for ${this.deps.idleStopMs / 1000} s.`;
    const stopped: string[] = [];
    for (const candidate of await idleServers(data, since)) {
      const row = await transaction(data, async (tx) => {
        await lockWorldJoins(tx, candidate.world_id);
        return stopIfIdle(tx, candidate.id, since, { error, at: now });
      });
      if (!row) continue;
      await this.lifecycle.afterEnd(row);
      stopped.push(row.id);
    }
    return stopped;
  }

  /**
   * Ends what the records and the spawner disagree on: servers past their deadline (a timer lost
   * with another node), idle servers, servers this node runs whose record ended or is gone (stopped through
   * another node, or their world deleted), and the servers of nodes that died (last: it asks the
   * KV store, which may not answer).
   */
  async reconcile(): Promise<void> {
    const data = this.deps.systemData();
    await this.lifecycle.endOverdue(data, new Date());
    await this.stopIdle(new Date());
    for (const id of this.deps.spawner.runningIds()) {
      const row = await findServer(data, id);
      if (!row || row.status === 'failed' || row.status === 'stopped') await this.deps.spawner.stop(id);
    }
    await this.stopOrphaned(new Date());
  }

  /** Stops the servers whose node's lease lapsed before `now`; returns the ones this call stopped. */
  stopOrphaned(now: Date): Promise<string[]> {
    return this.lifecycle.endOrphaned(now);
  }

  /** Stops everything this node runs (shutdown): their records end as stopped. */
  async close(): Promise<void> {
    this.lifecycle.clearDeadlines();
    const data = this.deps.systemData();
    const ids = this.deps.spawner.runningIds();
    await this.deps.spawner.close();
    for (const id of ids) {
      await endServer(data, id, { status: 'stopped', error: 'The service shut down.', at: new Date() }).catch(
        (err) => this.deps.log.warn({ err, serverId: id }, 'could not record a stopped game server'),
      );
    }
  }

  /**
   * The caller's place on a ready server of the world: the reservation they hold there, extended,
   * or a new one on the fullest server with room (their reservation moves; the visit is recorded
   * in the join's transaction). Without one, the starting server to wait for, if any.
   */
  private async reserve(
    data: DataAccess,
    userId: string,
    worldId: string,
    now: Date,
  ): Promise<{ slot?: ReservedSlot; starting?: GameServerRow }> {
    const request = {
      userId,
      worldId,
      now,
      expiresAt: new Date(now.getTime() + Math.min(RESERVATION_MS, this.deps.idleStopMs)),
    };
    const held = await extendReservation(data, request);
    if (held) return { slot: held };
    // Read before the ready servers: each statement sees the database as it is then, so a server
    // that turns ready in between is seen starting here or ready below, never neither (which
    // would start a second server).
    const starting = await startingServer(data, worldId);
    const reserved = await reserveRoomiest(data, request);
    if (!reserved) return starting ? { starting } : {};
    await this.deps.visits.recordVisit(data, { worldId, userId, serverId: reserved.id, at: now });
    return { slot: reserved };
  }

  /**
   * Runs the writes of a spawn or a join. A world deleted after it was read makes one of them fail
   * its foreign key (the world's, or a server's that went with it), which happens only once the
   * deletion committed: the caller then gets 404, as after the deletion, and nothing was written.
   */
  private async whileWorldExists<T>(ctx: Ctx, worldId: string, writes: () => Promise<T>): Promise<T> {
    try {
      return await writes();
    } catch (error) {
      if (!hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)) throw error;
      if (!(await this.deps.worlds.lookup(ctx, worldId))) throw noSuchWorld();
      throw error;
    }
  }

  private async managedWorld(ctx: Ctx, caller: AuthUser, worldId: string): Promise<WorldAccess> {
    if (hasRole(caller, 'admin')) {
      const world = await this.deps.worlds.lookup(ctx, worldId);
      if (!world) throw new AppError(ErrorCode.NOT_FOUND, 'No such world.');
      return world;
    }
    const world = await this.deps.worlds.readable(ctx, worldId);
    if (world.ownerId !== caller.id)
      throw new AppError(ErrorCode.FORBIDDEN, "Only the world's owner or an admin can start its servers.");
    return world;
  }

  /** A server the caller may see: its world's owner, whoever started it, or an admin; 404 otherwise. */
  private async visibleServer(ctx: Ctx, caller: AuthUser, serverId: string): Promise<GameServerRow> {
    let row = isId(serverId) ? await findServer(ctx.data, serverId) : undefined;
    if (!row) throw notFound();
    if (!hasRole(caller, 'admin') && row.requested_by !== caller.id) {
      const world = await this.deps.worlds.lookup(ctx, row.world_id);
      if (world?.ownerId !== caller.id) throw notFound();
    }
    if (row.status === 'starting' && row.ready_deadline <= ctx.now()) {
      await this.lifecycle.endOverdue(ctx.data, ctx.now(), row.world_id);
      row = (await findServer(ctx.data, serverId)) ?? row;
    }
    return row;
  }
}
