import type { EventPayloads } from '../../../protocol/frames.js';
import { type EventBus, userTopic } from '../../platform/bus.js';
import type { Kv } from '../../platform/kv/kv.js';
import type { Logger } from '../../platform/log.js';

type ReadMark = EventPayloads['dm.read'];

/** At most one `dm.read` per conversation and reader in this window, on all nodes together. */
export const READ_MARK_WINDOW_MS = 1000;
/** A node retries a waiting mark this long after its window, so the shared window has surely ended. */
const RETRY_MARGIN_MS = 50;
/** How long the last mark told is remembered, so a node late with an older one stays quiet. */
const TOLD_TTL_MS = 60_000;

interface Window {
  timer: NodeJS.Timeout;
  /** The latest mark that arrived while the window was closed, told when it opens. */
  waiting: { peer: string; mark: ReadMark } | undefined;
}

/**
 * Tells a conversation's peer how far the reader has read (`dm.read`), coalesced: the first mark
 * of a window goes out at once; a read during the window waits for its end, and then the mark as
 * stored at that moment is told, so the latest wins even when the reads went to several nodes.
 * The window is shared by the nodes through the KV store (a key set only if absent), and so is
 * the last mark told, so that of several nodes waiting with the same conversation only the first
 * tells it. Read marks are transient events: a reconnecting client refetches them with the
 * conversation list, and a flood of them can never push messages out of the bounded history it
 * recovers from.
 */
export class ReadMarkAnnouncer {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly deps: {
      bus: EventBus;
      kv: Kv;
      log: Logger;
      /** The reader's read mark as stored now. */
      storedMark(conversationId: string, userId: string): Promise<Date | undefined>;
    },
  ) {}

  /** Resolves once the mark was told, or set aside for the end of the window. */
  async announce(peer: string, mark: ReadMark): Promise<void> {
    const key = `${mark.conversation_id}:${mark.user_id}`;
    const open = this.windows.get(key);
    if (open) {
      open.waiting = { peer, mark };
      return;
    }
    await this.tell(key, peer, mark, false);
  }

  /** Stops the timers (shutdown): a mark still waiting is not told. */
  close(): void {
    for (const window of this.windows.values()) clearTimeout(window.timer);
    this.windows.clear();
  }

  /**
   * Opens this node's window for the key, then tells the mark if no node told one within the
   * window, else keeps it for the window's end. A mark that waited (`late`) is told as stored
   * now, unless that much was told already.
   */
  private async tell(key: string, peer: string, mark: ReadMark, late: boolean): Promise<void> {
    const window: Window = {
      timer: setTimeout(() => this.reopen(key), READ_MARK_WINDOW_MS + RETRY_MARGIN_MS),
      waiting: undefined,
    };
    window.timer.unref();
    this.windows.set(key, window);
    const { kv, bus, log } = this.deps;
    try {
      const first = await kv.set(`dm-read:window:${key}`, '1', {
        ttlMs: READ_MARK_WINDOW_MS,
        onlyIfAbsent: true,
      });
      if (!first) {
        window.waiting ??= { peer, mark };
        return;
      }
      const toldKey = `dm-read:told:${key}`;
      let told = mark;
      if (late) {
        const stored = await this.deps.storedMark(mark.conversation_id, mark.user_id);
        if (!stored) return;
        told = { ...mark, last_read_at: stored.toISOString() };
        // ISO times of one format compare as text in time order.
        if (((await kv.get(toldKey)) ?? '') >= told.last_read_at) return;
      }
      await bus.publish(userTopic(peer), { t: 'dm.read', d: told }, { transient: true });
      await kv.set(toldKey, told.last_read_at, { ttlMs: TOLD_TTL_MS });
    } catch (err) {
      // The read itself is committed; only its announcement is lost.
      log.warn({ err, event: 'dm.read' }, 'a read mark could not be announced');
    }
  }

  private reopen(key: string): void {
    const waiting = this.windows.get(key)?.waiting;
    this.windows.delete(key);
    if (waiting) void this.tell(key, waiting.peer, waiting.mark, true);
  }
}
