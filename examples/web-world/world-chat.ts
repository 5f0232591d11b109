import type { AtriumClient, World, WorldMessage } from '@atrium/client';
import { appendLine, el, errorText, guard, timeOf } from './dom.js';
import type { Names } from './names.js';

/**
 * The open world's chat: joined on every `ready` (AtriumClient adds the position it reached in
 * this chat, so the messages missed while the socket was down arrive before the join's answer),
 * and read again from the history when the service could not replay them all.
 */
export class WorldChat {
  private world: World | undefined;
  private readonly shown = new Set<string>();
  private readonly senderListeners = new Set<(userId: string) => void>();

  constructor(
    private readonly client: AtriumClient,
    private readonly names: Names,
    private readonly list: HTMLElement,
    form: HTMLFormElement,
    private readonly status: HTMLElement,
  ) {
    client.on('chat.message', (message) => {
      if ('world_id' in message && message.world_id === this.world?.id && message.room_id === null)
        this.show(message);
    });
    client.onMissedEvents((missed) => {
      if (missed.stream === 'chat' && missed.world_id === this.world?.id) void this.readHistory();
    });
    client.onStateChange((state) => {
      if (state === 'ready' && this.world) void this.join(this.world);
    });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const input = form.elements.namedItem('body') as HTMLInputElement;
      const world = this.world;
      if (!world || !input.value.trim()) return;
      const body = input.value;
      input.value = '';
      guard(this.status, async () => this.show(await client.call('chat.send', { world_id: world.id, body })));
    });
  }

  /** Calls `listener` with the sender of each message shown: the roster lists them. */
  onSender(listener: (userId: string) => void): void {
    this.senderListeners.add(listener);
  }

  async open(world: World): Promise<void> {
    const previous = this.world;
    this.world = world;
    this.shown.clear();
    this.list.replaceChildren();
    if (previous && previous.id !== world.id && this.client.state === 'ready')
      void this.client.call('chat.leave', { world_id: previous.id }).catch(() => undefined);
    await this.readHistory();
    if (this.client.state === 'ready') await this.join(world);
  }

  private async join(world: World): Promise<void> {
    try {
      await this.client.call('chat.join', { world_id: world.id });
    } catch (error) {
      this.status.textContent = `Could not join the chat: ${errorText(error)}`;
    }
  }

  private async readHistory(): Promise<void> {
    const world = this.world;
    if (!world) return;
    const page = await this.client.call('chat.worldHistory', { world_id: world.id, limit: 30 });
    if (world !== this.world) return;
    for (const message of [...page.items].reverse()) this.show(message);
  }

  private show(message: WorldMessage): void {
    if (this.shown.has(message.id)) return;
    this.shown.add(message.id);
    if (message.sender_id) for (const listener of this.senderListeners) listener(message.sender_id);
    const who = el('b');
    const line = el(
      'li',
      { 'data-message-id': message.id },
      `${timeOf(message.created_at)} `,
      who,
      ` ${message.body}`,
    );
    appendLine(this.list, line);
    void this.names.of(message.sender_id).then((name) => {
      who.textContent = `${name}:`;
    });
  }
}
