import { z } from 'zod';
import { positiveInt, url } from '../../platform/config-fields.js';

/** A JSON array of one or more non-empty strings (GAMESERVER_COMMAND's exact form). */
function isArgumentList(value: string): boolean {
  try {
    const parsed: unknown = JSON.parse(value);
    return (
      Array.isArray(parsed) && parsed.length > 0 && parsed.every((a) => typeof a === 'string' && a !== '')
    );
  } catch {
    return false;
  }
}

/** The game servers' settings (docs/gameservers.md), assembled into the Config by src/config.ts. */
export const gameServersConfig = {
  /** Where game servers run: `local` child processes, or `agones` GameServers (docs/gameservers.md). */
  GAMESERVER_SPAWNER: z.enum(['local', 'agones'], { error: 'must be one of local, agones' }).default('local'),
  /**
   * The local spawner's program: a JSON array of arguments (`["node","server.js"]`) or words split
   * on spaces; never run through a shell. Unset: the reference server in examples/gameserver/.
   */
  GAMESERVER_COMMAND: z
    .string()
    .min(1)
    .refine((value) => !value.startsWith('[') || isArgumentList(value), {
      message: 'must be a JSON array of non-empty strings when it starts with [',
    })
    .optional(),
  GAMESERVER_READY_TIMEOUT_MS: positiveInt(30_000, 3_600_000),
  /** How many game servers the local spawner runs at once on this node. */
  GAMESERVER_MAX_RUNNING: positiveInt(8, 10_000),
  /** Players a server is given before a join starts another one. */
  GAMESERVER_MAX_PLAYERS: positiveInt(32, 100_000),
  /** The internal API's base URL as game servers reach it; default http://<HOST>:<HTTP port>. */
  GAMESERVER_API_URL: url(['http:', 'https:']),
  /** The gateway's URL as game servers reach it (`--ws-url`); default ws://<HOST>:<WS port>/ws. */
  GAMESERVER_WS_URL: url(['ws:', 'wss:']),
  /** The host local servers tell players to connect to (their PUBLIC_HOST); default 127.0.0.1. */
  GAMESERVER_PUBLIC_HOST: z
    .string()
    .regex(
      /^[A-Za-z0-9.-]{1,253}$|^\[[0-9A-Fa-f:.]{2,45}\]$/,
      'must be a host name, an IPv4 address or a [bracketed] IPv6 address',
    )
    .optional(),
  /** A server with no players and no join reservation for this long is stopped. */
  GAMESERVER_IDLE_STOP_SECONDS: positiveInt(120, 86_400),
  /** Live game servers (starting or ready) one user may have caused at once. */
  GAMESERVER_MAX_LIVE_PER_USER: positiveInt(3, 10_000),
  /** Game servers one user may cause to start (by a join or as the owner) per window. */
  GAMESERVER_SPAWN_RATE_LIMIT_COUNT: positiveInt(3, 100_000),
  GAMESERVER_SPAWN_RATE_LIMIT_WINDOW_SECONDS: positiveInt(600, 86_400),
  /** How long a stopped local server may take to exit after SIGTERM before it is killed. */
  GAMESERVER_STOP_GRACE_MS: positiveInt(5_000, 600_000),
  /** The agones spawner (docs/gameservers-agones.md): where, and how, GameServers are made. */
  GAMESERVER_AGONES_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a Kubernetes namespace name')
    .default('default'),
  GAMESERVER_AGONES_MODE: z
    .enum(['create', 'allocate'], { error: 'must be one of create, allocate' })
    .default('create'),
  GAMESERVER_AGONES_FLEET: z.string().min(1).max(253).default('atrium-gameservers'),
  /** `create`: a GameServer template file (YAML or JSON); default deploy/agones/gameserver-template.yaml. */
  GAMESERVER_AGONES_TEMPLATE: z.string().min(1).optional(),
  GAMESERVER_AGONES_CONTAINER: z.string().min(1).max(63).optional(),
  GAMESERVER_AGONES_POLL_MS: positiveInt(500, 60_000),
  GAMESERVER_AGONES_REQUEST_TIMEOUT_MS: positiveInt(10_000, 600_000),
};
