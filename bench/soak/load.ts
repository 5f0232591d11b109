import { chunkPayload, variant } from '../worlds/harness.js';
import type { Cluster } from './cluster.js';
import type { Ledger } from './ledger.js';
import type { SoakOptions } from './options.js';
import { Refused, type SoakUser } from './soak-user.js';

/**
 * The soak's steady load: presence heartbeats, direct messages between peers and chunk writes
 * over the sockets, world chat messages over REST to a node that is up, each at its own rate
 * whatever the answers (a load that waited for answers would ease off during outages). Every
 * acknowledged write and every failed answer goes into the ledger.
 */

export interface SoakWorld {
  id: string;
  roomId: string;
  /** The owner, the one user who may write its chunks. */
  owner: SoakUser;
}

const TICK_MS = 100;
/** Chunks each world's owner edits, in a row of its main room. */
const CHUNKS_PER_WORLD = 8;
/** Bodies carry no numbers: the text filter reads digits as letters. */
const DM_BODY = 'See you at the lighthouse when the tide is low.';
const CHAT_BODY = 'Anyone up for the race around the harbour?';

interface Editor {
  busy: boolean;
  /** The revision each chunk is at as far as the editor knows (null: not created yet). */
  revisions: (number | null)[];
}

export class Load {
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly owed = { heartbeat: 0, dm: 0, chat: 0, chunk: 0 };
  private readonly editors = new Map<SoakWorld, Editor>();
  private readonly payload = chunkPayload(256);
  private edits = 0;
  private lastTick = 0;

  constructor(
    private readonly users: readonly SoakUser[],
    private readonly worlds: readonly SoakWorld[],
    private readonly cluster: Cluster,
    private readonly ledger: Ledger,
    private readonly options: SoakOptions,
  ) {
    for (const world of worlds)
      this.editors.set(world, { busy: false, revisions: Array(CHUNKS_PER_WORLD).fill(null) });
  }

  start(): void {
    this.lastTick = performance.now();
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  /** Stops sending and resolves once every request sent has been answered or given up. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled([...this.inFlight]);
  }

  private tick(): void {
    // From the time that passed, not the interval asked for: a busy event loop ticks late, and
    // the rates must hold regardless.
    const now = performance.now();
    const seconds = (now - this.lastTick) / 1000;
    this.lastTick = now;
    const rates = {
      heartbeat: this.users.length / this.options.heartbeatSeconds,
      dm: this.options.dmRate,
      chat: this.options.chatRate,
      chunk: this.options.chunkRate,
    };
    for (const kind of Object.keys(this.owed) as (keyof typeof this.owed)[]) {
      this.owed[kind] += rates[kind] * seconds;
      for (; this.owed[kind] >= 1; this.owed[kind]--) this.track(this[kind]());
    }
  }

  private track(operation: Promise<unknown>): void {
    const settled = operation.finally(() => this.inFlight.delete(settled));
    this.inFlight.add(settled);
  }

  private failed(error: unknown, what: string): void {
    if (error instanceof Refused) this.ledger.failed(what, { code: error.frame.code as string });
    else this.ledger.unanswered++;
  }

  /** A user whose socket is ready, if one is found in a few tries. */
  private someUser(): SoakUser | undefined {
    for (let attempt = 0; attempt < 10; attempt++) {
      const user = this.users[Math.floor(Math.random() * this.users.length)] as SoakUser;
      if (user.ready) return user;
    }
    return undefined;
  }

  private async heartbeat(): Promise<void> {
    const user = this.someUser();
    if (!user) return;
    try {
      await user.request('presence.heartbeat');
      this.ledger.heartbeats++;
    } catch (error) {
      this.failed(error, 'presence.heartbeat');
    }
  }

  private async dm(): Promise<void> {
    const user = this.someUser();
    if (!user) return;
    const sentAt = this.ledger.now();
    try {
      const message = await user.request<{ id: string }>('dm.send', { user_id: user.peerId, body: DM_BODY });
      this.ledger.dms.push({ id: message.id, senderId: user.id, recipientId: user.peerId, sentAt });
    } catch (error) {
      this.failed(error, 'dm.send');
    }
  }

  private async chat(): Promise<void> {
    const user = this.someUser();
    const nodes = this.cluster.up();
    const node = nodes[Math.floor(Math.random() * nodes.length)];
    if (!user || !node) return;
    const sentAt = this.ledger.now();
    try {
      const response = await fetch(`http://127.0.0.1:${node.httpPort}/api/worlds/${user.worldId}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ body: CHAT_BODY }),
        signal: AbortSignal.timeout(20_000),
      });
      const body = (await response.json()) as { id: string };
      if (response.status === 201) this.ledger.chats.push({ id: body.id, worldId: user.worldId, sentAt });
      else this.ledger.failed('POST world message', { status: response.status });
    } catch {
      this.ledger.unanswered++;
    }
  }

  private async chunk(): Promise<void> {
    const world = this.worlds[Math.floor(Math.random() * this.worlds.length)];
    const editor = world && this.editors.get(world);
    if (!world || !editor || editor.busy || !world.owner.ready) return;
    editor.busy = true;
    const x = Math.floor(Math.random() * CHUNKS_PER_WORLD);
    try {
      const written = await world.owner.request<{ revision: number }>('chunks.put', {
        world_id: world.id,
        room_id: world.roomId,
        x,
        y: 0,
        z: 0,
        payload: variant(this.payload, this.edits++),
        expected_revision: editor.revisions[x] ?? null,
      });
      editor.revisions[x] = written.revision;
      this.ledger.revisions.push({ revision: written.revision, roomId: world.roomId, x });
    } catch (error) {
      // A write whose answer was lost may have committed: the conflict tells the revision it made.
      if (error instanceof Refused && error.frame.code === 'REVISION_CONFLICT') {
        this.ledger.chunkConflicts++;
        editor.revisions[x] = error.frame.current_revision as number | null;
      } else this.failed(error, 'chunks.put');
    } finally {
      editor.busy = false;
    }
  }
}
