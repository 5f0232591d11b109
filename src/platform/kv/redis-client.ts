/** The ioredis clients RedisKv and ClusterKv talk through, for each way of reaching Redis (redis-topology.ts). */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { useLeanPipelines } from './lean-pipeline.js';
import type { ClusterTopology, SentinelTopology, ServerTopology } from './redis-topology.js';

// Before any client exists: every auto-pipelined batch of commands is an ioredis pipeline.
useLeanPipelines();

/** One server (REDIS_URL or the primary the Sentinels name) or a whole Redis Cluster. */
export type RedisClient = Redis | Cluster;

/** How long one reconnect attempt may wait for the TCP connection to a Redis that went silent. */
const CONNECT_TIMEOUT_MS = 2_000;

/**
 * Reconnect attempts back off up to this delay and never give up, so a Redis that comes back (or
 * the replica the Sentinels promoted) is used again within about half a second.
 */
const MAX_RECONNECT_DELAY_MS = 500;
const reconnectDelay = (attempt: number) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS);

/** What every command connection shares, whatever the topology. */
interface CommandSettings {
  commandTimeoutMs: number;
  keyPrefix: string;
}

/** The per-server options of a command connection (each node's, on a Cluster). */
function perServerOptions(settings: CommandSettings, password: string | undefined): RedisOptions {
  return {
    maxRetriesPerRequest: 0,
    commandTimeout: settings.commandTimeoutMs,
    connectTimeout: CONNECT_TIMEOUT_MS,
    ...(password ? { password } : {}),
  };
}

/**
 * The client options of a command connection. While Redis is down a command fails at once, and
 * one that gets no answer fails after the command timeout: callers answer 503 and rate limiters
 * switch to their in-memory insurance within a second. Nothing is queued while disconnected (that
 * queue has no bound, and would run writes long after their callers gave up), and a command in
 * flight when the connection drops fails at once rather than being resent later. Reconnecting
 * never stops. ioredis prefixes key arguments itself (scripts' KEYS and sharded channels included).
 */
function clientOptions(settings: CommandSettings) {
  return {
    lazyConnect: false,
    enableOfflineQueue: false,
    keyPrefix: settings.keyPrefix,
    // Commands issued in the same tick (concurrent heartbeats, limiter checks) share one write.
    enableAutoPipelining: true,
  };
}

/** The command connection to one server, or to the primary the Sentinels name. */
export function serverClient(topology: ServerTopology | SentinelTopology, settings: CommandSettings): Redis {
  const password = topology.kind === 'sentinel' ? topology.password : undefined;
  const common = {
    ...perServerOptions(settings, password),
    ...clientOptions(settings),
    retryStrategy: reconnectDelay,
  };
  if (topology.kind === 'server') return new Redis(topology.url, common);
  // ioredis asks the Sentinels for the primary on every (re)connect and checks its role, so after
  // a failover it reconnects to the promoted replica by itself.
  return new Redis({
    ...common,
    sentinels: topology.sentinels,
    name: topology.name,
    sentinelRetryStrategy: reconnectDelay,
    ...(topology.sentinelPassword ? { sentinelPassword: topology.sentinelPassword } : {}),
  });
}

/** The command connection to a Redis Cluster: one connection per node, discovered from `nodes`. */
export function clusterClient(topology: ClusterTopology, settings: CommandSettings): Cluster {
  // Reads go to the primaries too: a replica may lag, and every read here is followed by writes.
  return new Cluster(topology.nodes, {
    ...clientOptions(settings),
    // ioredis 5.11's auto-pipelining on a Cluster refuses batches whose keys' slots it has not
    // grouped onto one node yet ("All keys in the pipeline should belong to the same slots
    // allocation group"), failing unrelated commands issued in the same tick.
    enableAutoPipelining: false,
    scaleReads: 'master',
    clusterRetryStrategy: reconnectDelay,
    redisOptions: perServerOptions(settings, topology.password),
  });
}

/**
 * The subscriber connection, created on first subscribe: a connection in subscribe mode cannot run
 * other commands, and its few commands must not be batched with anything else. Unlike the command
 * connection it queues while disconnected: SUBSCRIBE and UNSUBSCRIBE must keep their order. The
 * queue stays small and short-lived: each queued command's caller gets the command timeout's
 * error, and every failed reconnect attempt empties it (maxRetriesPerRequest 0). RedisKv
 * resubscribes itself after a reconnect (whenResubscribed): ioredis' own way loses channels.
 */
export function subscriberClient(commands: Redis): Redis {
  return commands.duplicate({
    enableAutoPipelining: false,
    enableOfflineQueue: true,
    autoResubscribe: false,
  });
}

/**
 * subscriberClient on a Cluster: one connection per primary (sharded pub/sub), taking full channel
 * names (no key prefix); ioredis resubscribes them where their slot moved.
 */
export function shardedSubscriberClient(commands: Cluster): Cluster {
  return commands.duplicate([], {
    enableAutoPipelining: false,
    enableOfflineQueue: true,
    shardedSubscribers: true,
    keyPrefix: '',
  });
}
