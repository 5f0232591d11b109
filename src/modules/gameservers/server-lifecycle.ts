import type { DomainEventData } from '../../../protocol/domain-events.js';
import type { ServerAccess } from '../../../protocol/gameservers.js';
import type { EventBus } from '../../platform/bus.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { Logger } from '../../platform/log.js';
import type { Outbox } from '../../platform/outbox.js';
import type { PresenceApi } from '../presence/index.js';
import {
  deleteServer,
  endServer,
  failOverdue,
  findServer,
  type GameServerRow,
  insertServer,
  markReady,
  stopServersOfNodes,
  supervisingNodes,
} from './gameservers.repository.js';
import { sendFollows, type TakenFollow } from './party-follows.js';
import { newServerToken } from './server-tokens.js';
import { serverView } from './server-view.js';
import type { Spawner, SpawnListener } from './spawner.js';

export interface ServerLifecycleDeps {
  spawner: Spawner;
  bus: EventBus;
  log: Logger;
  readyTimeoutMs: number;
  maxPlayers: number;
  /** The internal API's base URL and the gateway's, known once the service listens. */
  apiUrl(): string;
  wsUrl(): string;
  /** A data handle outside any request, for the spawner's reports and the timers. */
  systemData(): DataAccess;
  /** This node's id (its presence node lease), recorded as the supervisor of its local servers. */
  nodeId: string;
  /** Which nodes hold a current lease: a local server's process dies or is orphaned with its node. */
  nodes: Pick<PresenceApi, 'aliveNodes'>;
  /** NODE_LEASE_SECONDS in ms: a node that has not renewed its lease for this long is dead. */
  nodeLeaseMs: number;
  /** `gameserver.failed` is recorded in the transaction that fails a server, when something consumes it. */
  outbox: Pick<Outbox, 'hasConsumers' | 'recordAll'>;
}

/** An outcome that ends a live server (endServer's). */
type Ending = Parameters<typeof endServer>[2];

/** A recorded `starting` server with its token in the clear, ready to be launched. */
export interface PendingLaunch {
  row: GameServerRow;
  token: string;
  /** Whether the spawn may take the node's last slots (its requester runs no other server). */
  mayTakeLastSlots: boolean;
}

const statusTopic = (serverId: string) => `gameserver:${serverId}`;
const SERVER_FAILED = 'gameserver.failed';
/** Every node hears of ended servers here, and closes their sockets (their tokens are dead). */
export const ENDED_SERVERS_TOPIC = 'gameservers:ended';

/**
 * A server's way through its states once recorded: launched by the spawner under a readiness
 * deadline, ready when the spawner or the server says so, and ended (token revoked, sockets closed,
 * process stopped, waiting joins told) whoever ends it. The service decides when; this carries
 * it out the same way every time.
 */
export class ServerLifecycle {
  private readonly deadlines = new Map<string, NodeJS.Timeout>();
  private readonly listener: SpawnListener = {
    ready: (serverId, address) => {
      this.settle(serverId, () => markReady(this.deps.systemData(), serverId, address, new Date()));
    },
    ended: (serverId, { failed, reason }) => {
      this.settle(serverId, () =>
        this.end(serverId, {
          status: failed ? 'failed' : 'stopped',
          error: failed ? reason : null,
          at: new Date(),
        }),
      );
    },
  };

  constructor(private readonly deps: ServerLifecycleDeps) {}

  /** Forgets the deadline timers (shutdown). */
  clearDeadlines(): void {
    for (const timer of this.deadlines.values()) clearTimeout(timer);
    this.deadlines.clear();
  }

  /** Records a `starting` server with a new token, in the caller's transaction. */
  async insertStarting(
    data: DataAccess,
    server: { worldId: string; ownerId: string; access: ServerAccess },
    now: Date,
  ): Promise<{ row: GameServerRow; token: string }> {
    const { token, hash } = newServerToken();
    const row = await insertServer(
      data,
      {
        id: newId(),
        world_id: server.worldId,
        requested_by: server.ownerId,
        access: server.access,
        backend: this.deps.spawner.kind,
        max_players: this.deps.maxPlayers,
        created_at: now,
        ready_deadline: new Date(now.getTime() + this.deps.readyTimeoutMs),
        // Kubernetes supervises an Agones server, whatever becomes of the node that asked for it.
        node_id: this.deps.spawner.kind === 'local' ? this.deps.nodeId : null,
      },
      hash,
    );
    return { row, token };
  }

  /** Hands a committed `starting` row to the spawner; a launch that fails ends the row `failed`. */
  async launch({ row, token, mayTakeLastSlots }: PendingLaunch): Promise<void> {
    this.armDeadline(row);
    try {
      await this.deps.spawner.start(
        {
          serverId: row.id,
          worldId: row.world_id,
          token,
          apiUrl: this.deps.apiUrl(),
          wsUrl: this.deps.wsUrl(),
          mayTakeLastSlots,
        },
        this.listener,
      );
    } catch (error) {
      this.clearDeadline(row.id);
      // Refused for capacity, nothing was started: no record of it is kept.
      if (error instanceof AppError && error.code === ErrorCode.GAMESERVER_CAPACITY) {
        await deleteServer(this.deps.systemData(), row.id);
        throw error;
      }
      const reason = error instanceof AppError ? error.message : 'The game server could not be started.';
      const ended = await this.end(row.id, { status: 'failed', error: reason, at: new Date() });
      if (ended) await this.afterEnd(ended);
      throw error instanceof AppError ? error : new AppError(ErrorCode.GAMESERVER_UNAVAILABLE, reason);
    }
  }

  /**
   * Why a server that missed its deadline failed: the same words whichever finds it first, its
   * node's timer or a sweep (reconcile, a join, a read).
   */
  get missedDeadline(): string {
    return `The server did not report ready within ${this.deps.readyTimeoutMs} ms.`;
  }

  /** Past the readiness deadline a starting server fails, and its process or GameServer goes. */
  private armDeadline(row: GameServerRow): void {
    const timer = setTimeout(
      () => {
        this.deadlines.delete(row.id);
        this.settle(row.id, () =>
          this.end(row.id, {
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

  clearDeadline(serverId: string): void {
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
   * Ends a live server as the spawner or a timer saw it end, outside any request; a failure
   * commits with its `gameserver.failed`.
   */
  private end(serverId: string, outcome: Ending): Promise<GameServerRow | undefined> {
    const data = this.deps.systemData();
    if (outcome.status !== 'failed' || !this.deps.outbox.hasConsumers(SERVER_FAILED))
      return endServer(data, serverId, outcome);
    return transaction(data, async (tx) => {
      const row = await endServer(tx, serverId, outcome);
      if (row) await this.recordFailed(tx, [row]);
      return row;
    });
  }

  /**
   * Fails the starting servers past their deadline (of one world, or all) in the transaction of
   * `data`, recording their `gameserver.failed` in it; the caller ends each (afterEnd) once it
   * committed.
   */
  async failOverdue(data: DataAccess, now: Date, worldId?: string): Promise<GameServerRow[]> {
    const failed = await failOverdue(data, now, this.missedDeadline, worldId);
    await this.recordFailed(data, failed);
    return failed;
  }

  /**
   * Fails the starting servers past their deadline (of one world, or all) and ends each as the
   * deadline timer would: sockets closed, process stopped, waiting joins told.
   */
  async endOverdue(data: DataAccess, now: Date, worldId?: string): Promise<void> {
    const failed = this.deps.outbox.hasConsumers(SERVER_FAILED)
      ? await transaction(data, (tx) => this.failOverdue(tx, now, worldId))
      : await failOverdue(data, now, this.missedDeadline, worldId);
    for (const row of failed) await this.afterEnd(row);
  }

  /** `gameserver.failed` of each failed server, as `GET /api/servers/{id}` shows it, in `tx`. */
  private async recordFailed(tx: DataAccess, failed: readonly GameServerRow[]): Promise<void> {
    if (failed.length === 0 || !this.deps.outbox.hasConsumers(SERVER_FAILED)) return;
    const events: DomainEventData[typeof SERVER_FAILED][] = failed.map((row) => ({
      server: serverView(row),
    }));
    await this.deps.outbox.recordAll(tx, SERVER_FAILED, events);
  }

  /**
   * Stops the live local servers of the nodes whose lease lapsed (docs/gameservers.md, "When a
   * node dies") and ends each as any stop does; returns the ones this call stopped. A server
   * recorded less than a lease ago is left to the next sweep: its node takes its lease as it
   * starts, a moment after it begins to serve.
   */
  async endOrphaned(now: Date): Promise<string[]> {
    const data = this.deps.systemData();
    const recordedBefore = new Date(now.getTime() - this.deps.nodeLeaseMs);
    const nodes = await supervisingNodes(data, this.deps.nodeId, recordedBefore);
    if (nodes.length === 0) return [];
    const alive = await this.deps.nodes.aliveNodes(nodes);
    const dead = nodes.filter((id) => !alive.has(id));
    if (dead.length === 0) return [];
    const error = 'The node that ran it stopped: its node lease lapsed.';
    const ended = await stopServersOfNodes(data, dead, { error, at: now, recordedBefore });
    for (const row of ended) await this.afterEnd(row);
    return ended.map((row) => row.id);
  }

  /** What follows a server's end, whoever ended it: sockets closed, process stopped, joins told. */
  async afterEnd(row: GameServerRow): Promise<void> {
    this.clearDeadline(row.id);
    await this.deps.bus.publishCommitted(
      ENDED_SERVERS_TOPIC,
      { t: 'gameservers.ended', d: { server_ids: [row.id] } },
      this.deps.log,
    );
    await this.deps.spawner.stop(row.id);
    await this.publishStatus(row);
  }

  /** Wakes the joins waiting for the server (on every node), and sends the follows a report took. */
  async publishStatus(row: GameServerRow & { follows?: readonly TakenFollow[] }): Promise<void> {
    await this.deps.bus.publishCommitted(
      statusTopic(row.id),
      { t: 'gameserver.status', d: { server_id: row.id, status: row.status } },
      this.deps.log,
    );
    if (row.follows?.length) await sendFollows(this.deps.bus, this.deps.log, row.follows);
  }

  /** Waits until a starting server is ready or ended (or its deadline passed), and returns it then. */
  async settled(data: DataAccess, row: GameServerRow): Promise<GameServerRow> {
    let wake: () => void = () => undefined;
    const unsubscribe = await this.deps.bus.subscribe(statusTopic(row.id), () => wake());
    try {
      for (;;) {
        const current = await findServer(data, row.id);
        // Gone: the spawn was refused for capacity (its record dropped), or its world deleted.
        if (!current) return { ...row, status: 'stopped', error: 'The server is gone.' };
        if (current.status !== 'starting') return current;
        const left = current.ready_deadline.getTime() - Date.now();
        if (left <= 0) {
          await this.endOverdue(data, new Date(), row.world_id);
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
