import type { EntityManager } from '@mikro-orm/postgresql';
import type { GameServer } from '../../../protocol/gameservers.js';
import type { AuthUser } from '../../platform/auth/access-tokens.js';
import type { GameServerPrincipal } from '../../platform/auth/game-server-auth.js';
import type { EventBus } from '../../platform/bus.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { isId, newId } from '../../platform/ids.js';
import type { Logger } from '../../platform/log.js';
import type { WorldAccess, WorldsApi } from '../worlds/index.js';
import {
  applyReport,
  deleteServer,
  endServer,
  failOverdue,
  findServer,
  type GameServerRow,
  insertServer,
  lockWorldJoins,
  markReady,
  reserveSlot,
  serverOfToken,
  startingServer,
} from './gameservers.repository.js';
import { hashServerToken, looksLikeServerToken, newServerToken } from './server-tokens.js';
import type { Spawner, SpawnListener } from './spawner.js';

export interface GameServersDeps {
  spawner: Spawner;
  worlds: WorldsApi;
  bus: EventBus;
  log: Logger;
  readyTimeoutMs: number;
  maxPlayers: number;
  /** The internal API's base URL and the gateway's, known once the service listens. */
  apiUrl(): string;
  wsUrl(): string;
  /** An entity manager outside any request, for the spawner's reports and the timers. */
  systemEm(): EntityManager;
}

const statusTopic = (serverId: string) => `gameserver:${serverId}`;
/** Every node hears of ended servers here, and closes their sockets (their tokens are dead). */
export const ENDED_SERVERS_TOPIC = 'gameservers:ended';
/** Joins re-check for a ready server this many times at most before giving up. */
const JOIN_ATTEMPTS = 5;

const notFound = () => new AppError(ErrorCode.NOT_FOUND, 'No such game server.');
const tokenDead = () =>
  new AppError(ErrorCode.UNAUTHENTICATED, 'The server token is invalid, or its server has ended.');

function view(row: GameServerRow): GameServer {
  const iso = (date: Date | null) => (date ? date.toISOString() : null);
  return {
    server_id: row.id,
    world_id: row.world_id,
    status: row.status,
    address: row.address,
    error: row.error,
    players: row.players,
    max_players: row.max_players,
    backend: row.backend,
    created_at: row.created_at.toISOString(),
    ready_at: iso(row.ready_at),
    ended_at: iso(row.ended_at),
    ready_deadline_at: row.ready_deadline.toISOString(),
  };
}

const isAdmin = (user: AuthUser) => user.roles.includes('admin');

/**
 * Game servers (docs/gameservers.md): their records, tokens and states. The spawner runs them; this
 * service decides. A server is `starting` until it reports ready itself (or Agones says Ready),
 * `failed` when it misses its deadline, crashes or cannot be launched, `stopped` when asked to or
 * when it exits cleanly. Ending a server clears its token hash, which is what revokes the token.
 */
export class GameServersService {
  private readonly deadlines = new Map<string, NodeJS.Timeout>();
  readonly listener: SpawnListener = {
    ready: (serverId, address) => {
      this.settle(serverId, () => markReady(this.deps.systemEm(), serverId, address, new Date()));
    },
    ended: (serverId, { failed, reason }) => {
      this.settle(serverId, () =>
        endServer(this.deps.systemEm(), serverId, {
          status: failed ? 'failed' : 'stopped',
          error: failed ? reason : null,
          at: new Date(),
        }),
      );
    },
  };

  constructor(private readonly deps: GameServersDeps) {}

  /** The /internal token check: the live server a token belongs to. */
  async principalOf(ctx: Ctx, token: string): Promise<GameServerPrincipal> {
    if (!looksLikeServerToken(token)) throw tokenDead();
    const server = await serverOfToken(ctx.em, hashServerToken(token), ctx.now());
    if (!server) throw tokenDead();
    return { serverId: server.id, worldId: server.world_id };
  }

  async spawn(ctx: Ctx, worldId: string): Promise<GameServer> {
    const caller = callerOf(ctx);
    const world = await this.managedWorld(ctx, caller, worldId);
    const { row, token } = await this.insertStarting(ctx.em, world.id, caller.id, ctx.now());
    await this.launch(row, token);
    return view(row);
  }

  async get(ctx: Ctx, serverId: string): Promise<GameServer> {
    const caller = callerOf(ctx);
    const row = await this.visibleServer(ctx, caller, serverId);
    return view(row);
  }

  /** Stops a server; an ended one stays as it is (the call is idempotent). */
  async stop(ctx: Ctx, serverId: string): Promise<void> {
    const caller = callerOf(ctx);
    const row = await this.visibleServer(ctx, caller, serverId);
    if (!isAdmin(caller) && (await this.deps.worlds.lookup(ctx, row.world_id))?.ownerId !== caller.id)
      throw new AppError(ErrorCode.FORBIDDEN, "Only the world's owner or an admin can stop its servers.");
    const ended = await endServer(ctx.em, row.id, { status: 'stopped', error: null, at: ctx.now() });
    if (ended) await this.afterEnd(ended);
  }

  /** A server's report on itself through the internal API. */
  async report(
    ctx: Ctx,
    report: { ready: boolean; address?: string | undefined; players?: number | undefined },
  ): Promise<GameServer> {
    const server = ctx.gameServer;
    if (!server) throw tokenDead();
    if (report.ready && report.address === undefined) {
      const message = 'is required with ready: true';
      throw new AppError(ErrorCode.VALIDATION_FAILED, `address ${message}`, {
        errors: [{ path: 'address', message }],
      });
    }
    const row = await applyReport(
      ctx.em,
      server.serverId,
      { ready: report.ready, address: report.address ?? null, players: report.players ?? null },
      ctx.now(),
    );
    if (!row) throw tokenDead();
    if (report.ready) this.clearDeadline(row.id);
    await this.publishStatus(row);
    return view(row);
  }

  /**
   * The address of a ready server of the world with a free player slot. Without one, the join
   * waits for a starting server, or starts one; joins of a world take turns on a lock, so
   * concurrent joins share one spawn.
   */
  async join(ctx: Ctx, worldId: string): Promise<{ server_id: string; world_id: string; address: string }> {
    const caller = callerOf(ctx);
    const world = await this.deps.worlds.readable(ctx, worldId);
    for (let attempt = 0; attempt < JOIN_ATTEMPTS; attempt++) {
      const now = ctx.now();
      const step = await ctx.em.transactional(async (em) => {
        await lockWorldJoins(em, world.id);
        const overdue = await failOverdue(em, now, this.missedDeadline, world.id);
        const slot = await reserveSlot(em, world.id);
        if (slot) {
          await this.deps.worlds.recordVisit(em, {
            worldId: world.id,
            userId: caller.id,
            serverId: slot.id,
            at: now,
          });
          return { slot, overdue };
        }
        const starting = await startingServer(em, world.id);
        if (starting) return { wait: starting, overdue };
        return { launch: await this.insertStarting(em, world.id, caller.id, now), overdue };
      });
      for (const row of step.overdue) await this.afterEnd(row);
      if (step.slot)
        return { server_id: step.slot.id, world_id: world.id, address: step.slot.address as string };
      const pending = step.launch?.row ?? (step.wait as GameServerRow);
      if (step.launch) await this.launch(step.launch.row, step.launch.token);
      const settled = await this.settled(ctx, pending);
      if (settled.status !== 'ready') {
        throw new AppError(
          ErrorCode.GAMESERVER_UNAVAILABLE,
          `No game server of this world became ready: ${settled.error ?? 'it was stopped'}`,
        );
      }
    }
    throw new AppError(ErrorCode.GAMESERVER_CAPACITY, 'Every game server of this world is full; try again.');
  }

  /**
   * Ends what the records and the spawner disagree on: servers past their deadline (a timer lost
   * with another node), and servers this node runs whose record ended or is gone (stopped through
   * another node, or their world deleted).
   */
  async reconcile(): Promise<void> {
    const em = this.deps.systemEm();
    await this.endOverdue(em, new Date());
    for (const id of this.deps.spawner.runningIds()) {
      const row = await findServer(em, id);
      if (!row || row.status === 'failed' || row.status === 'stopped') await this.deps.spawner.stop(id);
    }
  }

  /** Stops everything this node runs (shutdown): their records end as stopped. */
  async close(): Promise<void> {
    for (const timer of this.deadlines.values()) clearTimeout(timer);
    this.deadlines.clear();
    const em = this.deps.systemEm();
    const ids = this.deps.spawner.runningIds();
    await this.deps.spawner.close();
    for (const id of ids) {
      await endServer(em, id, { status: 'stopped', error: 'The service shut down.', at: new Date() }).catch(
        (err) => this.deps.log.warn({ err, serverId: id }, 'could not record a stopped game server'),
      );
    }
  }

  private async managedWorld(ctx: Ctx, caller: AuthUser, worldId: string): Promise<WorldAccess> {
    if (isAdmin(caller)) {
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
    let row = isId(serverId) ? await findServer(ctx.em, serverId) : undefined;
    if (!row) throw notFound();
    if (!isAdmin(caller) && row.requested_by !== caller.id) {
      const world = await this.deps.worlds.lookup(ctx, row.world_id);
      if (world?.ownerId !== caller.id) throw notFound();
    }
    if (row.status === 'starting' && row.ready_deadline <= ctx.now()) {
      await this.endOverdue(ctx.em, ctx.now(), row.world_id);
      row = (await findServer(ctx.em, serverId)) ?? row;
    }
    return row;
  }

  private async insertStarting(
    em: EntityManager,
    worldId: string,
    requestedBy: string,
    now: Date,
  ): Promise<{ row: GameServerRow; token: string }> {
    const { token, hash } = newServerToken();
    const row = await insertServer(
      em,
      {
        id: newId(),
        world_id: worldId,
        requested_by: requestedBy,
        backend: this.deps.spawner.kind,
        max_players: this.deps.maxPlayers,
        created_at: now,
        ready_deadline: new Date(now.getTime() + this.deps.readyTimeoutMs),
      },
      hash,
    );
    return { row, token };
  }

  /** Hands a committed `starting` row to the spawner; a launch that fails ends the row `failed`. */
  private async launch(row: GameServerRow, token: string): Promise<void> {
    this.armDeadline(row);
    try {
      await this.deps.spawner.start(
        {
          serverId: row.id,
          worldId: row.world_id,
          token,
          apiUrl: this.deps.apiUrl(),
          wsUrl: this.deps.wsUrl(),
        },
        this.listener,
      );
    } catch (error) {
      this.clearDeadline(row.id);
      // Refused for capacity, nothing was started: no record of it is kept.
      if (error instanceof AppError && error.code === ErrorCode.GAMESERVER_CAPACITY) {
        await deleteServer(this.deps.systemEm(), row.id);
        throw error;
      }
      const reason = error instanceof AppError ? error.message : 'The game server could not be started.';
      const ended = await endServer(this.deps.systemEm(), row.id, {
        status: 'failed',
        error: reason,
        at: new Date(),
      });
      if (ended) await this.afterEnd(ended);
      throw error instanceof AppError ? error : new AppError(ErrorCode.GAMESERVER_UNAVAILABLE, reason);
    }
  }

  /**
   * Why a server that missed its deadline failed: the same words whichever finds it first, its
   * node's timer or a sweep (reconcile, a join, a read).
   */
  private get missedDeadline(): string {
    return `The server did not report ready within ${this.deps.readyTimeoutMs} ms.`;
  }

  /** Past the readiness deadline a starting server fails, and its process or GameServer goes. */
  private armDeadline(row: GameServerRow): void {
    const timer = setTimeout(
      () => {
        this.deadlines.delete(row.id);
        this.settle(row.id, () =>
          endServer(this.deps.systemEm(), row.id, {
            status: 'failed',
            error: this.missedDeadline,
            at: new Date(),
            onlyIfStarting: true,
          }),
        );
      },
      Math.max(0, row.ready_deadline.getTime() - Date.now()),
    );
    timer.unref();
    this.deadlines.set(row.id, timer);
  }

  private clearDeadline(serverId: string): void {
    clearTimeout(this.deadlines.get(serverId));
    this.deadlines.delete(serverId);
  }

  /** Applies a change the spawner or a timer saw, then stops and announces as needed. */
  private settle(serverId: string, change: () => Promise<GameServerRow | undefined>): void {
    change()
      .then(async (row) => {
        if (!row) return;
        if (row.status === 'ready') {
          this.clearDeadline(row.id);
          await this.publishStatus(row);
        } else await this.afterEnd(row);
      })
      .catch((err) => this.deps.log.error({ err, serverId }, 'could not record a game server change'));
  }

  /**
   * Fails the starting servers past their deadline (of one world, or all) and ends each as the
   * deadline timer would: sockets closed, process stopped, waiting joins told.
   */
  private async endOverdue(em: EntityManager, now: Date, worldId?: string): Promise<void> {
    for (const row of await failOverdue(em, now, this.missedDeadline, worldId)) await this.afterEnd(row);
  }

  private async afterEnd(row: GameServerRow): Promise<void> {
    this.clearDeadline(row.id);
    await this.deps.bus.publishCommitted(
      ENDED_SERVERS_TOPIC,
      { t: 'gameservers.ended', d: { server_ids: [row.id] } },
      this.deps.log,
    );
    await this.deps.spawner.stop(row.id);
    await this.publishStatus(row);
  }

  private async publishStatus(row: GameServerRow): Promise<void> {
    await this.deps.bus.publishCommitted(
      statusTopic(row.id),
      { t: 'gameserver.status', d: { server_id: row.id, status: row.status } },
      this.deps.log,
    );
  }

  /** Waits until a starting server is ready or ended (or its deadline passed), and returns it then. */
  private async settled(ctx: Ctx, row: GameServerRow): Promise<GameServerRow> {
    let wake: () => void = () => undefined;
    const unsubscribe = await this.deps.bus.subscribe(statusTopic(row.id), () => wake());
    try {
      for (;;) {
        const current = await findServer(ctx.em, row.id);
        // Gone: the spawn was refused for capacity (its record dropped), or its world deleted.
        if (!current) return { ...row, status: 'stopped', error: 'The server is gone.' };
        if (current.status !== 'starting') return current;
        const left = current.ready_deadline.getTime() - Date.now();
        if (left <= 0) {
          await this.endOverdue(ctx.em, new Date(), row.world_id);
          continue;
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left + 10, 1000));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      await unsubscribe().catch(() => undefined);
    }
  }
}
