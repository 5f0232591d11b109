import type { AppError } from '../../platform/errors.js';

/**
 * How a dedicated game server gets started and stopped. The service keeps the server's record,
 * token and state (gameservers.service.ts); a spawner only runs the server somewhere and reports
 * what it sees. Two backends, chosen by GAMESERVER_SPAWNER: `local` (a child process, the embedded
 * default) and `agones` (a GameServer on Kubernetes).
 */

/** What a spawner is asked to run: one server for one world, with its launch arguments. */
export interface SpawnRequest {
  serverId: string;
  worldId: string;
  /** The per-spawn token, in the clear: the only time it exists outside the server. */
  token: string;
  /** Base URL of the internal API the server calls back (`--api-url`). */
  apiUrl: string;
  /** The gateway's URL, where the server follows its world's chunk stream (`--ws-url`). */
  wsUrl: string;
  /**
   * Whether the spawn may take the last slots a node keeps (docs/gameservers.md, "Spawn
   * limits"): true when the user who causes it has no other live server.
   */
  mayTakeLastSlots: boolean;
}

/** What a spawner tells the service about a server it started. */
export interface SpawnListener {
  /**
   * The backend itself saw the server become ready, at this address (`host:port`): Agones'
   * GameServer state `Ready` (or `Allocated`). Local servers report through the internal API
   * instead, so the local spawner never calls this.
   */
  ready(serverId: string, address: string): void;
  /**
   * The server is gone: its process exited, or its GameServer was deleted or turned Unhealthy.
   * `failed` is true for anything but a clean exit (code 0) or a stop the service asked for.
   */
  ended(serverId: string, outcome: { failed: boolean; reason: string }): void;
}

export interface Spawner {
  readonly kind: 'local' | 'agones';
  /**
   * Starts the server and resolves once it is launched (a process spawned, a GameServer created
   * or allocated); readiness comes later. Rejects with an AppError when it cannot:
   * GAMESERVER_CAPACITY (503) at the running-server limit or with no GameServer to allocate,
   * GAMESERVER_UNAVAILABLE (503) when the backend refuses or cannot be reached.
   */
  start(request: SpawnRequest, listener: SpawnListener): Promise<void>;
  /**
   * The GAMESERVER_CAPACITY refusal `start` would answer now for a spawn that may (or may not)
   * take the last slots, or undefined when it has room: the service asks before it records a
   * spawn. Absent where the capacity is not known here: Agones answers for it when it allocates
   * or schedules (docs/gameservers-agones.md).
   */
  capacityRefusal?(mayTakeLastSlots: boolean): AppError | undefined;
  /**
   * Stops the server if this spawner runs it (a no-op otherwise): SIGTERM then SIGKILL after a
   * grace period, or deleting the GameServer. Resolves once it is gone or the deletion accepted;
   * `ended` is not called for a stop the service asked for.
   */
  stop(serverId: string): Promise<void>;
  /** How many servers this spawner currently runs (for the capacity limit and metrics). */
  readonly running: number;
  /** The ids of the servers it runs, for the service's reconciliation with their records. */
  runningIds(): string[];
  /** Stops every server it runs; called at shutdown. */
  close(): Promise<void>;
}
