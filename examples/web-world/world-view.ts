import type { AtriumClient, ChunksCommitEvent, World } from '@atrium/client';
import {
  type Block,
  type BlockType,
  blockKey,
  blocksOf,
  chunkKey,
  chunkOf,
  MAX_Y,
  MIN_Y,
  payloadOf,
} from './blocks.js';
import { appendLine, el, errorText } from './dom.js';
import type { Names } from './names.js';
import type { VoxelScene } from './scene.js';

/**
 * One open world, kept in step with the service: its room `main` loaded with `chunks.load` and
 * followed with `chunks.subscribe`, both made again on every `ready` (a new socket has no
 * subscription, and commits made while it was down are not replayed: the load catches up by
 * revision, docs/worlds.md). Edits are chunk writes naming the revision they replace; a write that
 * lost a race (409 REVISION_CONFLICT) reloads and applies the edit again.
 */

interface ChunkState {
  cx: number;
  cz: number;
  /** The revision these blocks are; null for a chunk never written. */
  revision: number | null;
  blocks: Map<string, Block>;
}

const WRITE_ATTEMPTS = 3;
/** A commit changing more blocks than this is told as one line (a new world's terrain). */
const NARRATED_CHANGES = 8;

const describe = (block: Block): string => `${block.type} at ${blockKey(block.x, block.y, block.z)}`;
/** What the feed's lines carry for a reader that is not a person (test/clients/web-world.test.ts). */
const attributes = (kind: string, block: Block): Record<string, string> => ({
  'data-kind': kind,
  'data-at': blockKey(block.x, block.y, block.z),
});

export class WorldView {
  world: World | undefined;
  private roomId = '';
  private chunks = new Map<string, ChunkState>();
  /** Edits go one at a time, each on the state the previous one left. */
  private writes: Promise<void> = Promise.resolve();
  /** Bumped when another world opens: answers for the previous one are dropped. */
  private generation = 0;
  private readonly authorListeners = new Set<(userId: string) => void>();

  constructor(
    private readonly client: AtriumClient,
    private readonly me: { id: string },
    private readonly names: Names,
    private readonly scene: VoxelScene,
    private readonly feed: HTMLElement,
    private readonly info: HTMLElement,
  ) {
    client.on('chunks.commit', (commit) => this.applyCommit(commit));
    client.on('chunks.resync', ({ world_id }) => {
      if (world_id === this.world?.id) void this.load();
    });
    client.on('chunks.room_deleted', ({ world_id }) => {
      if (world_id === this.world?.id) void this.load();
    });
    client.on('chunks.stream_ended', ({ world_id, reason }) => {
      if (world_id !== this.world?.id) return;
      this.note(`This world is no longer readable (${reason}).`);
      this.close();
    });
    client.onStateChange((state) => {
      if (state === 'ready' && this.world) void this.follow();
    });
  }

  get canBuild(): boolean {
    return this.world?.owner_id === this.me.id;
  }

  /** Calls `listener` with each user whose edit arrives: the roster shows them. */
  onAuthor(listener: (userId: string) => void): void {
    this.authorListeners.add(listener);
  }

  async open(world: World): Promise<void> {
    const previous = this.world;
    this.close();
    if (previous && this.client.state === 'ready')
      void this.client.call('chunks.unsubscribe', { world_id: previous.id }).catch(() => undefined);
    this.world = world;
    this.roomId = world.rooms.find((room) => room.name === 'main')?.id ?? world.rooms[0]?.id ?? '';
    this.feed.replaceChildren();
    this.note(
      this.canBuild
        ? 'Your world: click to place, right-click to remove.'
        : 'Watching: only the owner builds here.',
    );
    if (this.client.state === 'ready') await this.follow();
  }

  close(): void {
    this.generation++;
    this.world = undefined;
    this.chunks.clear();
    this.scene.clear();
    this.showInfo();
  }

  /** The number of blocks drawn, for the info line. */
  get blockCount(): number {
    let count = 0;
    for (const chunk of this.chunks.values()) count += chunk.blocks.size;
    return count;
  }

  place(x: number, y: number, z: number, type: BlockType): void {
    if (y < MIN_Y || y > MAX_Y) {
      this.note(`Blocks go between heights ${MIN_Y} and ${MAX_Y}.`);
      return;
    }
    this.edit(x, z, (blocks) => {
      if (blocks.has(blockKey(x, y, z))) return false;
      blocks.set(blockKey(x, y, z), { x, y, z, type });
      return true;
    });
  }

  remove(x: number, y: number, z: number): void {
    this.edit(x, z, (blocks) => blocks.delete(blockKey(x, y, z)));
  }

  /** Writes the blocks, in turn after earlier edits. */
  writeChunks(chunks: Map<string, Block[]>): Promise<void> {
    const done = [...chunks.values()].map((blocks) => {
      const [first] = blocks;
      return first
        ? this.queue(first.x, first.z, (current) => {
            for (const block of blocks) current.set(blockKey(block.x, block.y, block.z), block);
            return true;
          })
        : Promise.resolve();
    });
    return Promise.all(done).then(() => undefined);
  }

  private edit(x: number, z: number, change: (blocks: Map<string, Block>) => boolean): void {
    if (!this.canBuild) {
      this.note('Only the owner builds in this world.');
      return;
    }
    void this.queue(x, z, change).catch((error: unknown) => this.note(`Not saved: ${errorText(error)}`));
  }

  private queue(x: number, z: number, change: (blocks: Map<string, Block>) => boolean): Promise<void> {
    const run = this.writes.then(() => this.write(x, z, change));
    this.writes = run.catch(() => undefined);
    return run;
  }

  private async write(x: number, z: number, change: (blocks: Map<string, Block>) => boolean): Promise<void> {
    const world = this.world;
    if (!world) return;
    const { cx, cz } = chunkOf(x, z);
    for (let attempt = 1; ; attempt++) {
      const current = this.chunks.get(chunkKey(cx, cz));
      const blocks = new Map(current?.blocks);
      if (!change(blocks)) return;
      try {
        const { revision } = await this.client.call('chunks.put', {
          world_id: world.id,
          room_id: this.roomId,
          x: cx,
          y: 0,
          z: cz,
          payload: payloadOf(blocks.values()),
          expected_revision: current?.revision ?? null,
        });
        if (world === this.world) this.applyChunk(cx, cz, revision, [...blocks.values()], this.me.id);
        return;
      } catch (error) {
        const lostRace = (error as { code?: string }).code === 'REVISION_CONFLICT';
        if (!lostRace || attempt === WRITE_ATTEMPTS || world !== this.world) throw error;
        // Another editor wrote this chunk first: take their version and apply the edit to it.
        await this.load();
      }
    }
  }

  /** Subscribes, then loads: commits after the subscription are applied on top of the load. */
  private async follow(): Promise<void> {
    const world = this.world;
    if (!world) return;
    try {
      await this.client.call('chunks.subscribe', { world_id: world.id, room_id: this.roomId });
      await this.load();
    } catch (error) {
      if (world === this.world) this.note(`Could not follow the world: ${errorText(error)}`);
    }
  }

  /** The room as of one content revision; chunks a commit already took further are kept. */
  private async load(): Promise<void> {
    const world = this.world;
    if (!world) return;
    const generation = this.generation;
    const pages: { x: number; z: number; revision: number; payload: Uint8Array }[] = [];
    // One load at a time per world view: every page arriving before the ack is this load's.
    const off = this.client.on('chunks.page', (page) => pages.push(...page.chunks));
    let loaded: number;
    try {
      loaded = (await this.client.call('chunks.load', { world_id: world.id, room_id: this.roomId }))
        .content_revision;
    } finally {
      off();
    }
    if (generation !== this.generation) return;
    const seen = new Set<string>();
    for (const chunk of pages) {
      const key = chunkKey(chunk.x, chunk.z);
      seen.add(key);
      this.applyChunk(chunk.x, chunk.z, chunk.revision, blocksOf(chunk.payload));
    }
    // A chunk left out of the load was deleted at or before its revision, unless a commit since brought it.
    for (const [key, chunk] of this.chunks)
      if (!seen.has(key) && (chunk.revision ?? 0) <= loaded) this.applyChunk(chunk.cx, chunk.cz, loaded, []);
    this.showInfo(loaded);
  }

  private applyCommit(commit: ChunksCommitEvent): void {
    if (commit.world_id !== this.world?.id) return;
    for (const revision of commit.revisions) {
      if (revision.room_id !== this.roomId || revision.y !== 0) continue;
      const blocks = revision.payload ? blocksOf(revision.payload) : [];
      this.applyChunk(revision.x, revision.z, revision.revision, blocks, commit.author_id);
    }
    this.showInfo(commit.content_revision);
  }

  /**
   * Takes a chunk's blocks at `revision` unless what is shown is as new. With an author (a write's
   * answer or a commit), the difference goes to the feed; a load's catch-up is not narrated.
   */
  private applyChunk(
    cx: number,
    cz: number,
    revision: number,
    blocks: Block[],
    author?: string | null,
  ): void {
    const key = chunkKey(cx, cz);
    const current = this.chunks.get(key);
    if (current?.revision != null && current.revision >= revision) return;
    const next = new Map(blocks.map((block) => [blockKey(block.x, block.y, block.z), block]));
    this.chunks.set(key, { cx, cz, revision, blocks: next });
    this.scene.setChunk(key, blocks);
    this.showInfo();
    if (author === undefined) return;
    if (author) for (const listener of this.authorListeners) listener(author);
    const before = current?.blocks ?? new Map<string, Block>();
    const placed = [...next].filter(([at]) => !before.has(at)).map(([, block]) => block);
    const removed = [...before].filter(([at]) => !next.has(at)).map(([, block]) => block);
    if (placed.length + removed.length > NARRATED_CHANGES) {
      this.narrate(author, `changed ${placed.length + removed.length} blocks`, { 'data-kind': 'bulk' });
      return;
    }
    for (const block of placed)
      this.narrate(author, `placed ${describe(block)}`, attributes('placed', block));
    for (const block of removed)
      this.narrate(author, `removed ${describe(block)}`, attributes('removed', block));
  }

  private narrate(author: string | null, what: string, attributes: Record<string, string>): void {
    const line = el('li', attributes);
    appendLine(this.feed, line, 50);
    const who = author === this.me.id ? Promise.resolve('you') : this.names.of(author);
    void who.then((name) => {
      line.textContent = `${name} ${what}`;
    });
  }

  private note(text: string): void {
    appendLine(this.feed, el('li', { 'data-kind': 'note' }, text), 50);
  }

  private showInfo(contentRevision?: number): void {
    if (contentRevision !== undefined) this.info.dataset.revision = String(contentRevision);
    this.info.dataset.blocks = String(this.blockCount);
    this.info.textContent = this.world
      ? `${this.world.name} · ${this.world.visibility} · ${this.blockCount} blocks · revision ${this.info.dataset.revision ?? '?'}`
      : 'No world open';
  }
}
