/** RedisKv's and ClusterKv's ioredis connections: their settings, becoming ready, reporting outages, closing. */
import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './redis-client.js';

export interface RedisKvOptions {
  /** Called for connection errors and for subscribers that throw; defaults to console.error. */
  onError?: (error: unknown, context: string) => void;
  /** How long ping() waits before it rejects, and connect() for Redis to become ready. */
  pingTimeoutMs?: number;
  /**
   * A command not answered within this time rejects, so a Redis that hangs or went silent fails
   * requests quickly (503 to the caller) instead of holding them. REDIS_COMMAND_TIMEOUT_MS.
   */
  commandTimeoutMs?: number;
  /**
   * Prepended to every key and channel, so several deployments (or test runs) can share one
   * Redis without seeing each other's data. Libraries given `client` get it too.
   */
  namespace?: string;
}

/** The default of REDIS_COMMAND_TIMEOUT_MS, for callers that do not pass the setting. */
const DEFAULT_COMMAND_TIMEOUT_MS = 500;

/** What the command connection is created with (redis-client.ts), from the options. */
export function clientSettings(options: RedisKvOptions): { commandTimeoutMs: number; keyPrefix: string } {
  return {
    commandTimeoutMs: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    keyPrefix: options.namespace ?? '',
  };
}

/**
 * QUIT when connected, so replies already on their way still arrive; otherwise, or when QUIT is not
 * answered within a second, just drop the socket. Never throws.
 */
export async function closeConnection(connection: RedisClient): Promise<void> {
  if (connection.status === 'end') return;
  if (connection.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, 1_000);
    });
    try {
      await Promise.race([connection.quit(), timeout]);
    } catch {
      // Falls through to disconnect().
    } finally {
      clearTimeout(timer);
    }
  }
  // Harmless after a successful QUIT; stops any reconnecting in every other case.
  connection.disconnect();
}

/**
 * Resolves once `connection` is ready for commands; rejects after `timeoutMs` (naming the last
 * connection error, which never contains the URL's password) or when it was closed.
 */
export function untilReady(connection: RedisClient, timeoutMs: number): Promise<void> {
  if (connection.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    let lastError: Error | undefined;
    const onError = (error: Error) => {
      lastError = error;
    };
    const settle = (error?: Error) => {
      clearTimeout(timer);
      connection.off('ready', onReady);
      connection.off('error', onError);
      connection.off('end', onEnd);
      if (error) reject(error);
      else resolve();
    };
    const onReady = () => settle();
    const onEnd = () => settle(new Error('The Redis connection was closed before it was ready'));
    const timer = setTimeout(() => {
      const cause = lastError ? `: ${lastError.message}` : '';
      settle(new Error(`Redis was not ready within ${timeoutMs} ms${cause}`));
    }, timeoutMs);
    connection.on('ready', onReady);
    connection.on('error', onError);
    connection.on('end', onEnd);
  });
}

/**
 * ioredis emits an error for every failed reconnect attempt, several a second while Redis is down.
 * The first one of an outage is reported, the rest only once the connection was ready again. The
 * listener is needed anyway: without one ioredis prints each as "Unhandled error event".
 */
export function reportErrorsOncePerOutage(connection: RedisClient, report: (error: Error) => void): void {
  let reported = false;
  connection.on('error', (error: Error) => {
    if (reported) return;
    reported = true;
    report(error);
  });
  connection.on('ready', () => {
    reported = false;
  });
}

/** PING, rejecting when Redis does not answer within `timeoutMs` or answers something else. */
export async function pingWithin(connection: RedisClient, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Redis did not answer PING within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    const reply = await Promise.race([connection.ping(), timeout]);
    if (reply !== 'PONG') throw new Error(`Unexpected PING reply: ${reply}`);
  } finally {
    clearTimeout(timer);
  }
}

/** How soon a resubscription that failed on a connection still up (a timeout) is tried again. */
const RESUBSCRIBE_RETRY_MS = 200;

/**
 * Subscribes `subscriber` again to `channels()` each time it is ready after it lost its connection
 * (a restarted Redis, or the primary the Sentinels promoted), then calls `notify`: messages
 * published meanwhile are gone, and what `notify` reads from the histories next cannot miss one the
 * subscription did not carry either, since SUBSCRIBE was answered first. The subscriber must be
 * created with ioredis' own resubscription off: ioredis records a channel only once SUBSCRIBE is
 * answered, so a connection lost again before that forgets every channel for good. On a Cluster,
 * ioredis resubscribes its shards itself: see whenShardsResubscribed.
 */
export function whenResubscribed(subscriber: Redis, channels: () => string[], notify: () => void): void {
  let wasReady = false;
  let lost = false;
  let resubscribing = false;
  const resubscribe = async (): Promise<void> => {
    if (!lost || resubscribing || subscriber.status !== 'ready') return;
    resubscribing = true;
    const names = channels();
    try {
      // With nothing to subscribe, a PING still proves the connection answers again.
      await (names.length > 0 ? subscriber.subscribe(...names) : subscriber.ping());
    } catch {
      // Lost again: the next 'ready' resubscribes. Timed out on a live connection: try again.
      if (subscriber.status === 'ready') setTimeout(() => void resubscribe(), RESUBSCRIBE_RETRY_MS).unref();
      return;
    } finally {
      resubscribing = false;
    }
    lost = false;
    notify();
  };
  subscriber.on('close', () => {
    lost = wasReady;
  });
  subscriber.on('ready', () => {
    wasReady = true;
    void resubscribe();
  });
}

/**
 * What ioredis 5 keeps of a Cluster's sharded subscribers (not in its typings). Should a later
 * version keep them elsewhere, the fill runs at once, without the PING's proof.
 */
interface ShardSubscribers {
  shardedSubscribers?: Map<string, { getInstance(): Redis | null }>;
}

/**
 * On a Cluster ioredis replaces a shard's subscriber whose connection ended (the
 * primary restarted or failed over, the slot moved) and subscribes its channels again itself:
 * messages published meanwhile are gone. Calls `notify` once the new subscriptions are answered,
 * proven by a PING each shard's connection answers after the SSUBSCRIBE sent before it
 * (`subscribersReady` comes right after ioredis sent them, not after Redis answered).
 */
export function whenShardsResubscribed(cluster: Cluster, notify: () => void): void {
  let lost = false;
  cluster.on('-subscriber', () => {
    lost = true;
  });
  cluster.on('subscribersReady', () => {
    if (!lost) return;
    lost = false;
    const kept = (cluster as unknown as { shardedSubscribers?: ShardSubscribers }).shardedSubscribers;
    const shards = [...(kept?.shardedSubscribers?.values() ?? [])].map((s) => s.getInstance());
    // A shard lost again before answering is replaced once more by ioredis: the next
    // subscribersReady notifies then.
    void Promise.all(shards.map((shard) => shard?.ping())).then(notify, () => {});
  });
}
