import { Encoder } from '@msgpack/msgpack';
import {
  type ChunksCommitEvent,
  type ChunksResyncEvent,
  type ChunksRoomDeletedEvent,
  type ChunksStreamEndedEvent,
  MAX_CHUNK_STREAMS_PER_CONNECTION,
} from '../../../protocol/chunks.js';
import { principalId, serviceOf } from '../../platform/auth/principal.js';
import type { BusEvent, EventBus } from '../../platform/bus.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { Connection } from '../../platform/gateway/connection.js';
import type { Logger } from '../../platform/log.js';

/**
 * Live chunk streams: each node follows a world's bus topic once for all its subscribers and
 * delivers the world's commits in commit order. Publishers on different nodes can reach the bus
 * out of order, so every commit carries the world's stream sequence number (bumped under the
 * world's lock) and a node holds a commit back until the ones before it arrived. A commit that
 * never arrives, a reader too slow to keep up and a commit too large to stream all end the same
 * way: a `chunks.resync` event telling the client to reload from the last revision it got,
 * instead of a silent hole.
 */

/** A commit's payloads above this many bytes are not streamed; subscribers get a resync instead. */
export const STREAM_INLINE_BYTES = 4 * 1024 * 1024;
/** How long a node waits for a missing commit before telling its subscribers to resync. */
const GAP_WAIT_MS = 500;
/** Commits held back behind a missing one before the node gives up waiting. */
const MAX_HELD = 256;

const encoder = new Encoder({ ignoreUndefined: true });
const encodeFrame = (t: string, d: unknown) => encoder.encode({ t, d });
export const worldTopic = (worldId: string) => `world:${worldId}`;

/**
 * A commit as published: the client event, and whether its payloads were left out (for size, or
 * a rollback, whose payloads never leave the database). A rollback names the rooms it touched
 * instead of listing its revisions, which may be a whole world's.
 */
type PublishedCommit = ChunksCommitEvent & { partial?: boolean; rooms?: string[] };
/** Not sent to clients: a world turned private, so only its owner may keep following it. */
const HIDDEN = 'chunks.hidden';

interface Member {
  connection: Connection;
  /** Who subscribed (principalId): a connection that switched to someone else stops receiving. */
  principal: string | undefined;
  /** The rooms followed; null for the whole world. */
  rooms: Set<string> | null;
  /** Commits up to this sequence number were in the snapshot the subscription started from. */
  fromSeq: number;
  /** The content revision after the last commit delivered: where a resync reloads from. */
  lastRevision: number;
  /** Skipping commits until the client read its buffer down; a resync follows. */
  behind: boolean;
  /** Frames for a subscription whose ack has not been sent yet, so none overtakes it. */
  pending: Uint8Array[] | undefined;
}

interface WorldStream {
  worldId: string;
  ownerId: string;
  members: Set<Member>;
  /** The next sequence number to deliver; unknown until the first subscriber read its snapshot. */
  expected: number | undefined;
  /** The content revision after the last commit delivered (or the first snapshot). */
  lastContentRevision: number;
  held: Map<number, BusEvent>;
  gapTimer: NodeJS.Timeout | undefined;
  subscription: Promise<() => Promise<void>>;
}

export class ChunkStreams {
  private readonly worlds = new Map<string, WorldStream>();
  private readonly byConnection = new Map<Connection, Set<Member>>();

  constructor(
    private readonly deps: {
      bus: EventBus;
      log: Logger;
      /** Above this many unread bytes a subscriber stops getting commits and later resyncs. */
      behindAboveBytes: number;
    },
  ) {}

  /** Publishes a commit after its transaction committed; `seq` is its stream sequence number. */
  async publishCommit(seq: number, commit: ChunksCommitEvent): Promise<void> {
    const bytes = commit.revisions.reduce((sum, r) => sum + (r.payload?.byteLength ?? 0), 0);
    const d: PublishedCommit =
      bytes > STREAM_INLINE_BYTES
        ? { ...commit, partial: true, revisions: commit.revisions.map((r) => ({ ...r, payload: null })) }
        : commit;
    await this.publish(commit.world_id, { t: 'chunks.commit', d, seq });
  }

  /**
   * Publishes a rollback after its transaction committed. Its revisions are not streamed: every
   * subscriber following one of `rooms` is told to resync from the revision it had, and reloads
   * what changed (as for a commit too large to stream).
   */
  publishRollback(
    seq: number,
    rollback: Omit<ChunksCommitEvent, 'revisions'> & { rooms: string[] },
  ): Promise<void> {
    const d: PublishedCommit = { ...rollback, revisions: [], partial: true };
    return this.publish(rollback.world_id, { t: 'chunks.commit', d, seq });
  }

  publishRoomDeleted(seq: number, event: ChunksRoomDeletedEvent): Promise<void> {
    return this.publish(event.world_id, { t: 'chunks.room_deleted', d: event, seq });
  }

  publishWorldDeleted(worldId: string): Promise<void> {
    const d: ChunksStreamEndedEvent = { world_id: worldId, reason: 'world_deleted' };
    return this.publish(worldId, { t: 'chunks.stream_ended', d });
  }

  publishHidden(worldId: string): Promise<void> {
    return this.publish(worldId, { t: HIDDEN, d: { world_id: worldId } });
  }

  /** Streams are best effort after the commit: a lost event shows as a gap, and gaps resync. */
  private publish(worldId: string, event: BusEvent): Promise<void> {
    return this.deps.bus.publishCommitted(worldTopic(worldId), event, this.deps.log);
  }

  /**
   * Adds a subscription once the node hears the world's topic. `snapshot` reads the world's
   * stream sequence and content revision afterwards, so every commit after that snapshot is
   * delivered and none before it. Returns the snapshot's content revision.
   */
  async subscribe(
    connection: Connection,
    world: { id: string; ownerId: string },
    roomId: string | null,
    snapshot: () => Promise<{ seq: number; contentRevision: number }>,
  ): Promise<number> {
    const principal = principalId(connection.principal);
    const existing = this.memberOf(connection, world.id);
    if (existing) {
      if (roomId === null) existing.rooms = null;
      else existing.rooms?.add(roomId);
    } else if ((this.byConnection.get(connection)?.size ?? 0) >= MAX_CHUNK_STREAMS_PER_CONNECTION) {
      throw new AppError(
        ErrorCode.SUBSCRIPTION_LIMIT,
        `A connection may follow at most ${MAX_CHUNK_STREAMS_PER_CONNECTION} worlds.`,
      );
    }
    const stream = this.streamOf(world);
    let snapshotRead: { seq: number; contentRevision: number };
    try {
      await stream.subscription;
      snapshotRead = await snapshot();
    } catch (error) {
      if (stream.members.size === 0 && this.worlds.get(world.id) === stream) this.drop(stream);
      throw error;
    }
    if (existing) return existing.lastRevision;
    const first = stream.expected === undefined;
    if (stream.expected === undefined) {
      stream.expected = snapshotRead.seq + 1;
      stream.lastContentRevision = snapshotRead.contentRevision;
      for (const held of stream.held.keys()) if (held < stream.expected) stream.held.delete(held);
    }
    // A node that already delivered past the snapshot (while it was being read) starts the new
    // member where the node stands instead: the commits in between will not come again.
    const start =
      stream.expected - 1 > snapshotRead.seq
        ? { seq: stream.expected - 1, contentRevision: stream.lastContentRevision }
        : snapshotRead;
    if (connection.closed) return start.contentRevision;
    const member: Member = {
      connection,
      principal,
      rooms: roomId === null ? null : new Set([roomId]),
      fromSeq: start.seq,
      lastRevision: start.contentRevision,
      behind: false,
      pending: [],
    };
    stream.members.add(member);
    this.track(connection, member);
    if (first) this.drain(stream);
    // The ack is sent when this handler's promise settles; frames wait until after it.
    setImmediate(() => {
      const pending = member.pending ?? [];
      member.pending = undefined;
      for (const bytes of pending) this.send(stream, member, bytes, member.lastRevision);
    });
    return start.contentRevision;
  }

  /** Stops following a room, or (without a room) the world with all its rooms. */
  unsubscribe(connection: Connection, worldId: string, roomId: string | null): void {
    const member = this.memberOf(connection, worldId);
    if (!member) return;
    if (roomId !== null && member.rooms !== null) {
      member.rooms.delete(roomId);
      if (member.rooms.size > 0) return;
    } else if (roomId !== null) return;
    this.remove(member, worldId);
  }

  private memberOf(connection: Connection, worldId: string): Member | undefined {
    const stream = this.worlds.get(worldId);
    if (!stream) return undefined;
    for (const member of this.byConnection.get(connection) ?? [])
      if (stream.members.has(member)) return member;
    return undefined;
  }

  private track(connection: Connection, member: Member): void {
    let members = this.byConnection.get(connection);
    if (!members) {
      members = new Set();
      this.byConnection.set(connection, members);
      connection.closeListeners ??= [];
      connection.closeListeners.push(() => {
        for (const m of this.byConnection.get(connection) ?? []) this.remove(m);
        this.byConnection.delete(connection);
      });
    }
    members.add(member);
  }

  private remove(member: Member, worldId?: string): void {
    this.byConnection.get(member.connection)?.delete(member);
    for (const stream of worldId ? [this.worlds.get(worldId)] : this.worlds.values()) {
      if (!stream?.members.delete(member) || stream.members.size > 0) continue;
      this.drop(stream);
    }
  }

  private drop(stream: WorldStream): void {
    this.worlds.delete(stream.worldId);
    clearTimeout(stream.gapTimer);
    stream.subscription
      .then((unsubscribe) => unsubscribe())
      .catch((err) => this.deps.log.warn({ err, worldId: stream.worldId }, 'dropping a chunk stream failed'));
  }

  private streamOf(world: { id: string; ownerId: string }): WorldStream {
    let stream = this.worlds.get(world.id);
    if (stream) return stream;
    const created: WorldStream = {
      worldId: world.id,
      ownerId: world.ownerId,
      members: new Set(),
      expected: undefined,
      lastContentRevision: 0,
      held: new Map(),
      gapTimer: undefined,
      subscription: this.deps.bus.subscribe(worldTopic(world.id), (event) => this.receive(created, event)),
    };
    this.worlds.set(world.id, created);
    stream = created;
    return stream;
  }

  private receive(stream: WorldStream, event: BusEvent): void {
    if (this.worlds.get(stream.worldId) !== stream) return;
    if (event.seq === undefined) {
      this.control(stream, event);
      return;
    }
    if (stream.expected !== undefined && event.seq < stream.expected) return;
    stream.held.set(event.seq, event);
    this.drain(stream);
  }

  /** Delivers held commits in sequence; a gap that outlasts its wait turns into resyncs. */
  private drain(stream: WorldStream): void {
    if (stream.expected === undefined) return;
    for (let event = stream.held.get(stream.expected); event; event = stream.held.get(stream.expected)) {
      stream.held.delete(stream.expected);
      this.deliver(stream, event, stream.expected);
      stream.expected++;
    }
    clearTimeout(stream.gapTimer);
    stream.gapTimer = undefined;
    if (stream.held.size === 0) return;
    if (stream.held.size >= MAX_HELD) this.skipGap(stream);
    else stream.gapTimer = setTimeout(() => this.skipGap(stream), GAP_WAIT_MS);
  }

  private skipGap(stream: WorldStream): void {
    const missing = stream.expected as number;
    // Members whose snapshot came after the missing commit already have it.
    for (const member of stream.members)
      if (member.fromSeq < missing) this.resync(stream, member, 'missed_commit');
    stream.expected = Math.min(...stream.held.keys());
    this.drain(stream);
  }

  private deliver(stream: WorldStream, event: BusEvent, seq: number): void {
    stream.lastContentRevision = (event.d as { content_revision: number }).content_revision;
    const encodings = new Map<string, Uint8Array>();
    const encoded = (key: string, build: () => unknown) => {
      let bytes = encodings.get(key);
      if (!bytes) {
        bytes = encodeFrame(event.t, build());
        encodings.set(key, bytes);
      }
      return bytes;
    };
    for (const member of stream.members) {
      if (seq <= member.fromSeq) continue;
      if (principalId(member.connection.principal) !== member.principal) {
        this.remove(member, stream.worldId);
        continue;
      }
      if (event.t === 'chunks.room_deleted') {
        const d = event.d as ChunksRoomDeletedEvent;
        if (member.rooms && !member.rooms.has(d.room_id)) continue;
        this.send(
          stream,
          member,
          encoded('', () => d),
          d.content_revision,
        );
        member.rooms?.delete(d.room_id);
        if (member.rooms?.size === 0) this.remove(member, stream.worldId);
        continue;
      }
      const { partial, rooms, ...commit } = event.d as PublishedCommit;
      const revisions = member.rooms
        ? commit.revisions.filter((r) => member.rooms?.has(r.room_id))
        : commit.revisions;
      const touched = rooms
        ? member.rooms === null || rooms.some((room) => member.rooms?.has(room))
        : revisions.length > 0;
      if (!touched) {
        if (!member.behind && !member.pending) member.lastRevision = commit.content_revision;
        continue;
      }
      if (partial) {
        this.resync(stream, member, 'large_commit');
        member.lastRevision = commit.content_revision;
        continue;
      }
      const key = revisions === commit.revisions ? '' : [...new Set(revisions.map((r) => r.room_id))].join();
      this.send(
        stream,
        member,
        encoded(key, () => ({ ...commit, revisions })),
        commit.content_revision,
      );
    }
  }

  /** Sends one commit unless the subscriber fell behind; past the limit it starts falling behind. */
  private send(stream: WorldStream, member: Member, bytes: Uint8Array, contentRevision: number): void {
    if (member.pending) {
      member.pending.push(bytes);
      member.lastRevision = contentRevision;
      return;
    }
    if (member.behind) return;
    const { connection } = member;
    if (connection.bufferedBytes <= this.deps.behindAboveBytes && connection.sendPaced(bytes) === 'sent') {
      member.lastRevision = contentRevision;
      return;
    }
    if (connection.closed) return;
    member.behind = true;
    connection.drained(this.deps.behindAboveBytes / 4).then(() => {
      member.behind = false;
      if (stream.members.has(member)) this.resync(stream, member, 'slow_consumer');
    });
  }

  private resync(stream: WorldStream, member: Member, reason: ChunksResyncEvent['reason']): void {
    if (member.behind) return;
    const d: ChunksResyncEvent = { world_id: stream.worldId, from_revision: member.lastRevision, reason };
    if (member.pending) member.pending.push(encodeFrame('chunks.resync', d));
    else member.connection.sendPaced(encodeFrame('chunks.resync', d));
  }

  /** Unsequenced events: the world is gone, or only its owner may follow it now. */
  private control(stream: WorldStream, event: BusEvent): void {
    const deleted = event.t === 'chunks.stream_ended';
    const reason: ChunksStreamEndedEvent['reason'] = deleted ? 'world_deleted' : 'access_revoked';
    const bytes = encodeFrame('chunks.stream_ended', { world_id: stream.worldId, reason });
    for (const member of [...stream.members]) {
      // The owner keeps following a world turned private, and so do its game servers (services),
      // whose tokens are for this world whatever its visibility.
      const keepsFollowing = member.principal === stream.ownerId || serviceOf(member.connection.principal);
      if (!deleted && keepsFollowing) continue;
      member.connection.sendPaced(bytes);
      this.remove(member, stream.worldId);
    }
  }
}
