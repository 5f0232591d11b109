import type {
  AdminGameServer,
  GameServer,
  GameServerStatusFilter,
  PartyPlacement,
  ServerAccess,
} from '../../../protocol/gameservers.js';
import type { AuthUser } from '../../platform/auth/access-tokens.js';
import type { ServicePrincipal } from '../../platform/auth/service-tokens.js';
import { type Ctx, callerOf, hasRole, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { canonicalId, isId } from '../../platform/ids.js';
import type { AuditApi } from '../audit/index.js';
import type { DiscoveryApi } from '../discovery/index.js';
import type { WorldAccess, WorldsApi } from '../worlds/index.js';
import {
  adminServersPage,
  anythingLive,
  applyReport,
  endServer,
  findServer,
  type GameServerRow,
  idleServers,
  lockWorldJoins,
  serverOfToken,
  stopIfIdle,
} from './gameservers.repository.js';
import { sendFollows, takeSettledFollows } from './party-follows.js';
import { type PartyJoinDeps, PartyJoins } from './party-join.js';
import { freshReservations, lockReservationsOnWorld } from './reservations.repository.js';
import { ServerLifecycle, type ServerLifecycleDeps } from './server-lifecycle.js';
import { hashServerToken, looksLikeServerToken } from './server-tokens.js';
import { serverView } from './server-view.js';
import type { SpawnAdmission } from './spawn-admission.js';
import {
  type JoinTarget,
  type WorldJoinAnswer,
  WorldJoins,
  type WorldJoinsDeps,
  whileWorldExists,
} from './world-join.js';

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
  /** What a party join reads: the caller's party and its members' presence. */
  party: Pick<PartyJoinDeps, 'parties' | 'presence'>;
  /** Blocks, for the access of friends and invite servers (admission.ts). */
  social: WorldJoinsDeps['social'];
}

const notFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such game server.');
/** The nil UUID: no server has it, so a join naming a malformed id finds no server, as for an unknown one. */
const NO_SERVER = '00000000-0000-0000-0000-000000000000';
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
  /** Joins of worlds, by access or naming a server; the join of a friend goes through them too. */
  readonly joins: WorldJoins;
  private readonly partyJoins: PartyJoins;

  constructor(private readonly deps: GameServersDeps) {
    this.lifecycle = new ServerLifecycle(deps);
    this.joins = new WorldJoins({ ...deps, lifecycle: this.lifecycle });
    this.partyJoins = new PartyJoins({
      ...deps.party,
      joins: this.joins,
      bus: deps.bus,
      maxPlayers: deps.maxPlayers,
    });
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
    const spawn = await whileWorldExists(ctx, this.deps.worlds, world.id, () =>
      transaction(ctx.data, async (tx) => {
        const { mayTakeLastSlots } = await this.deps.admission.admit(tx, caller.id);
        const started = await this.lifecycle.insertStarting(
          tx,
          { worldId: world.id, ownerId: caller.id, access: 'public' },
          ctx.now(),
        );
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
   * The address of a ready server of the world for the caller (docs/gameservers.md, "User API" and
   * "Instance access"): by access (public by default), or on the server named; `access` and
   * `server_id` together are refused before anything is read. `party: true` takes the caller's
   * party along ("Joining together"), its own refusals coming before the server's.
   */
  async join(
    ctx: Ctx,
    worldId: string,
    options: {
      access?: ServerAccess | undefined;
      server_id?: string | undefined;
      party?: boolean | undefined;
    } = {},
  ): Promise<WorldJoinAnswer & { party_placement?: PartyPlacement }> {
    const caller = callerOf(ctx);
    if (options.access !== undefined && options.server_id !== undefined) {
      const message = 'access and server_id cannot be given together';
      throw new AppError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ path: '', message }] });
    }
    const world = await this.deps.worlds.readable(ctx, worldId);
    // A server id that cannot name a server names none: 404 in the placement's turn, as an unknown one.
    const target: JoinTarget =
      options.server_id === undefined
        ? { access: options.access ?? 'public' }
        : { serverId: isId(options.server_id) ? canonicalId(options.server_id) : NO_SERVER };
    if (options.party) return this.partyJoins.join(ctx, world, target);
    return this.joins.join(ctx, caller.id, world, target);
  }

  /**
   * Takes, in the transaction deleting the world and before its row goes (WorldsApi.onDeleting),
   * what joins lock before they need rows the deletion holds. A join's turn takes the world's join
   * lock and locks its servers (failing an overdue one, reserving a place), then needs the world's
   * row for a new server or its visit; a party placed in another world locks its members'
   * reservations, then the server they leave here. The deletion locks the world's row, then the
   * servers and reservations it cascades to: without these locks first, each waited for the other
   * until Postgres cancelled one as a deadlock.
   */
  async beforeWorldDeleted(tx: DataAccess, worldId: string): Promise<void> {
    await lockWorldJoins(tx, worldId);
    await lockReservationsOnWorld(tx, worldId);
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
    // Without a live server nor a follow, the sweeps below have nothing to find.
    const live = await anythingLive(data);
    if (live) {
      await this.lifecycle.endOverdue(data, new Date());
      await this.stopIdle(new Date());
    }
    for (const id of this.deps.spawner.runningIds()) {
      const row = await findServer(data, id);
      if (!row || row.status === 'failed' || row.status === 'stopped') await this.deps.spawner.stop(id);
    }
    if (!live) return;
    await this.stopOrphaned(new Date());
    // Follows of ready servers that nobody sent: the leader's node died before taking them.
    await sendFollows(this.deps.bus, this.deps.log, await takeSettledFollows(data, null));
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
