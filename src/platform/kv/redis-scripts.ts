/** The Lua scripts RedisKv and ClusterKv run, each one atomic step on Redis, and the keys of event histories. */

import type { HistoryRead, VersionedMember } from './kv.js';
import type { RedisClient } from './redis-client.js';

/**
 * INCRBY, and PEXPIRE only when the key did not exist before, in one atomic step. Checking EXISTS
 * (rather than comparing the result with the increment) stays right for a key that held 0.
 */
export const INCR_SCRIPT = `
local fresh = redis.call('EXISTS', KEYS[1]) == 0
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if fresh and ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return value`;

/**
 * Kv.setAndPeek, for each write i in order: KEYS[2i-1] is set to ARGV[3i-2] for ARGV[3i-1] ms, then
 * KEYS[2i] is read only when the channel ARGV[3i] has subscribers. The reply is flat, two per
 * write: 1 or 0 (listened), then the value read, nil when not read or missing (Lua's false: a nil
 * inside the array, which does not end it as Lua's nil would).
 */
const SET_AND_PEEK_SCRIPT = `
local found = {}
for i = 1, #KEYS / 2 do
  local a = 3 * i - 2
  redis.call('SET', KEYS[2 * i - 1], ARGV[a], 'PX', ARGV[a + 1])
  if redis.call('PUBSUB', 'NUMSUB', ARGV[a + 2])[2] == 0 then
    found[2 * i - 1] = 0
    found[2 * i] = false
  else
    found[2 * i - 1] = 1
    found[2 * i] = redis.call('GET', KEYS[2 * i])
  end
end
return found`;

export const EXPIRE_MANY_SCRIPT = `
local existed = {}
for i, key in ipairs(KEYS) do existed[i] = redis.call('PEXPIRE', key, ARGV[1]) end
return existed`;

/**
 * Sets `primary` to the replication id of the server running the script. A history remembers the
 * primary it was written under (meta field `p`): Redis replicates asynchronously, so a replica
 * promoted by a failover may lack the last events the old primary took, and would give their
 * offsets to new events. A history read or written under another primary than its own starts a
 * new epoch, so a reader from before the failover is told `recovered: false` rather than that it
 * missed nothing. A promotion, like a restart, gives the server a new replication id (about 4 µs
 * per call to read it).
 */
const CURRENT_PRIMARY = `local primary = string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')`;

/**
 * A recorded publish to one or more channels. For each channel, a pair of KEYS: its history's meta
 * hash (epoch `e`, last offset `o`, primary `p`) and stream (entry id `<offset>-0`, fields `d` the
 * message and `t` the time in ms); ARGV: the message, max length, the stream's TTL ms, now, the
 * meta hash's TTL ms, then for each channel its name and the epoch to start with when it has none.
 * A lost meta hash, or one of another primary (CURRENT_PRIMARY), starts a new epoch and drops the
 * stream of the old one, whose ids the new offsets would repeat. The meta hash outlives the stream
 * (HISTORY_META_TTL_MS): a reader who missed nothing while the stream expired is still told so.
 * The message is published with its position in front (kv.ts framePositioned). Answers each
 * channel's offset and epoch, flat. On a Redis Cluster every key of one call must be in one hash
 * slot, so ClusterKv calls it per slot, and it publishes with SPUBLISH to channels named with the
 * same hash tag as the keys (`<prefix>{<channel>}`), which reaches only the subscribers of that
 * shard.
 */
const publishRecordedScript = (publish: 'PUBLISH' | 'SPUBLISH') => `${CURRENT_PRIMARY}
local positions = {}
for i = 1, #KEYS / 2 do
  local meta, stream = KEYS[2 * i - 1], KEYS[2 * i]
  local kept = redis.call('HMGET', meta, 'e', 'p')
  local epoch = kept[1]
  if not epoch or (kept[2] and kept[2] ~= primary) then
    epoch = ARGV[5 + 2 * i]
    redis.call('DEL', stream)
    redis.call('HSET', meta, 'e', epoch, 'o', 0, 'p', primary)
  elseif not kept[2] then
    redis.call('HSET', meta, 'p', primary)
  end
  local offset = redis.call('HINCRBY', meta, 'o', 1)
  redis.call('XADD', stream, 'MAXLEN', ARGV[2], offset .. '-0', 'd', ARGV[1], 't', ARGV[4])
  redis.call('PEXPIRE', meta, ARGV[5])
  redis.call('PEXPIRE', stream, ARGV[3])
  redis.call('${publish}', ARGV[4 + 2 * i], offset .. ':' .. epoch .. ':' .. ARGV[1])
  positions[2 * i - 1] = offset
  positions[2 * i] = epoch
end
return positions`;

/**
 * The meta hash's epoch and offset and the stream's entries after ARGV[1], in one consistent read.
 * A missing history, or one of another primary, starts here (epoch ARGV[3], offset 0), so the
 * position a reader is given is the one the next publish continues.
 */
const READ_HISTORY_SCRIPT = `${CURRENT_PRIMARY}
local meta = redis.call('HMGET', KEYS[1], 'e', 'o', 'p')
if not meta[1] or (meta[3] and meta[3] ~= primary) then
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'e', ARGV[3], 'o', 0, 'p', primary)
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {ARGV[3], 0, {}}
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {meta[1], tonumber(meta[2]), redis.call('XRANGE', KEYS[2], '(' .. ARGV[1] .. '-0', '+', 'COUNT', ARGV[2])}`;

/**
 * On a Redis Cluster, the subscribers of the sharded channel KEYS[1] (the key prefix ioredis adds
 * to it makes it the channel's full name). Run as a script only to reach the primary that owns
 * the channel's slot: PUBSUB SHARDNUMSUB counts only the subscribers of the node it runs on.
 */
const SHARD_SUBSCRIBERS_SCRIPT = `return redis.call('PUBSUB', 'SHARDNUMSUB', KEYS[1])[2]`;

/**
 * Kv.zreplaceVersionedMany: KEYS[1] is the ordered set, KEYS[2] the hash of versions; ARGV holds
 * three per entry: the field, its version, and ' ' followed by its member ('' for none). A field's
 * hash value is its version followed by that third argument, so the member it stored is what
 * follows the first space. ZCARD and the first HGET fail with WRONGTYPE before anything is written
 * (a script's writes are not undone by a later error). Answers 1 (applied) or 0 per entry.
 */
const REPLACE_VERSIONED_SCRIPT = `
redis.call('ZCARD', KEYS[1])
local applied = {}
for i = 1, #ARGV, 3 do
  local stored = redis.call('HGET', KEYS[2], ARGV[i])
  local space = stored and string.find(stored, ' ', 1, true)
  local version = stored and tonumber(space and string.sub(stored, 1, space - 1) or stored)
  if version and version >= tonumber(ARGV[i + 1]) then
    applied[#applied + 1] = 0
  else
    if space then redis.call('ZREM', KEYS[1], string.sub(stored, space + 1)) end
    if ARGV[i + 2] ~= '' then redis.call('ZADD', KEYS[1], 0, string.sub(ARGV[i + 2], 2)) end
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1] .. ARGV[i + 2])
    applied[#applied + 1] = 1
  end
end
return applied`;

/** REPLACE_VERSIONED_SCRIPT's ARGV for `entries`. */
export const replaceVersionedArgs = (entries: readonly VersionedMember[]): string[] =>
  entries.flatMap(({ field, version, member }) => [
    field,
    String(version),
    member === null ? '' : ` ${member}`,
  ]);

/**
 * Kv.zwindowOfField: KEYS[1] is the ordered set, KEYS[2] the hash of versions; ARGV the field,
 * `before` and `count`. The field's member is what follows the first space of its hash value
 * (REPLACE_VERSIONED_SCRIPT); a field without one counts as position 0. Answers the window's
 * start, the set's size and its members, read in one step.
 */
const FIELD_WINDOW_SCRIPT = `
local stored = redis.call('HGET', KEYS[2], ARGV[1])
local space = stored and string.find(stored, ' ', 1, true)
local size = redis.call('ZCARD', KEYS[1])
local count = tonumber(ARGV[3])
local position = 0
if space then position = redis.call('ZLEXCOUNT', KEYS[1], '-', '(' .. string.sub(stored, space + 1)) end
local start = math.max(0, math.min(position - tonumber(ARGV[2]), size - count))
if count == 0 then return {start, size, {}} end
return {start, size, redis.call('ZRANGE', KEYS[1], start, start + count - 1)}`;

/** The scripts as defined commands (readHistoryBuffer: bulk strings as Buffers). */
export interface DefinedScripts {
  /** Each channel's offset and epoch, flat; the Sharded one on a Redis Cluster. */
  publishRecorded(...args: (string | number | Buffer)[]): Promise<(number | string)[]>;
  publishRecordedSharded(...args: (string | number | Buffer)[]): Promise<(number | string)[]>;
  shardSubscribers(channelTag: string): Promise<number>;
  readHistoryBuffer(...args: (string | number)[]): Promise<[Buffer, number, [Buffer, Buffer[]][]]>;
  /** Two elements per write: 1 or 0 (listened), then the value read or null. */
  setAndPeek(...args: (string | number)[]): Promise<(number | string | null)[]>;
  /** 1 or 0 per entry, whether it applied. */
  replaceVersioned(setKey: string, versionsKey: string, ...entries: string[]): Promise<number[]>;
  fieldWindow(
    setKey: string,
    versionsKey: string,
    field: string,
    before: number,
    count: number,
  ): Promise<[number, number, string[]]>;
}

/** Both keys of a history share the channel name in braces: one hash slot, so one script may touch both. */
export function historyMetaKey(channel: string): string {
  return `hist:{${channel}}:meta`;
}

export function historyStreamKey(channel: string): string {
  return `hist:{${channel}}:stream`;
}

/** Defines the scripts the hot paths run as commands of `redis` (see DefinedScripts). */
export function defineScripts(redis: RedisClient): void {
  // A defined command runs by EVALSHA and has a Buffer-returning twin for binary replies.
  // The number of keys is the first argument: two per channel.
  redis.defineCommand('publishRecorded', { lua: publishRecordedScript('PUBLISH') });
  redis.defineCommand('publishRecordedSharded', { lua: publishRecordedScript('SPUBLISH') });
  redis.defineCommand('shardSubscribers', { numberOfKeys: 1, lua: SHARD_SUBSCRIBERS_SCRIPT });
  redis.defineCommand('readHistory', { numberOfKeys: 2, lua: READ_HISTORY_SCRIPT });
  redis.defineCommand('setAndPeek', { lua: SET_AND_PEEK_SCRIPT });
  redis.defineCommand('replaceVersioned', { numberOfKeys: 2, lua: REPLACE_VERSIONED_SCRIPT });
  redis.defineCommand('fieldWindow', { numberOfKeys: 2, lua: FIELD_WINDOW_SCRIPT });
}

/** READ_HISTORY_SCRIPT's reply (as Buffers) as a history read: entry ids are `<offset>-0`. */
export function historyRead([epoch, offset, entries]: [Buffer, number, [Buffer, Buffer[]][]]): HistoryRead {
  return {
    position: { offset, epoch: epoch.toString() },
    entries: entries.map(([id, fields]) => {
      const field = (name: string) =>
        fields[fields.findIndex((f, i) => i % 2 === 0 && f.toString() === name) + 1];
      return {
        offset: Number.parseInt(id.toString(), 10),
        at: Number((field('t') as Buffer).toString()),
        message: new Uint8Array(field('d') as Buffer),
      };
    }),
  };
}
