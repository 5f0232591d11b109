import type { AtriumClient, Message, SocialUser } from '@atrium/client';
import { appendLine, el, guard, timeOf } from './dom.js';
import type { Names } from './names.js';
import { type PresenceWatch, userBadge } from './presence.js';

/**
 * Friends and direct messages: the friend list with presence, incoming requests, and one open
 * conversation. Friend and DM events reach every socket of the user without subscribing, and a
 * reconnect replays those missed; when it cannot (`onMissedEvents`, stream `user`), the lists and
 * the open conversation are read again.
 */
export class SocialPanel {
  friends: SocialUser[] = [];
  private peer: SocialUser | undefined;
  private readonly shown = new Set<string>();
  private readonly unread = new Set<string>();
  private readonly changeListeners = new Set<() => void>();
  /** The open conversation's id, learnt from its first message shown. */
  private conversationId: string | undefined;

  constructor(
    private readonly client: AtriumClient,
    private readonly me: { id: string },
    private readonly names: Names,
    private readonly presence: PresenceWatch,
    private readonly elements: {
      friends: HTMLElement;
      requests: HTMLElement;
      addForm: HTMLFormElement;
      conversation: HTMLElement;
      messages: HTMLElement;
      dmForm: HTMLFormElement;
      status: HTMLElement;
    },
  ) {
    for (const type of ['social.friend_request', 'social.friend_accepted', 'social.friend_removed'] as const)
      client.on(type, () => void this.refresh());
    client.on('dm.message', (message) => this.received(message));
    client.onMissedEvents((missed) => {
      if (missed.stream !== 'user') return;
      void this.refresh();
      if (this.peer) void this.openConversation(this.peer);
    });
    presence.onChange(() => this.render());
    elements.addForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const input = elements.addForm.elements.namedItem('user_id') as HTMLInputElement;
      const userId = input.value.trim();
      input.value = '';
      if (userId) this.befriendOrMessage(userId);
    });
    elements.dmForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const input = elements.dmForm.elements.namedItem('body') as HTMLInputElement;
      const peer = this.peer;
      if (!peer || !input.value.trim()) return;
      const body = input.value;
      input.value = '';
      guard(elements.status, async () => this.show(await client.call('dm.send', { user_id: peer.id, body })));
    });
  }

  /** Calls `listener` when the friend list changed: the party panel offers friends to invite. */
  onChange(listener: () => void): void {
    this.changeListeners.add(listener);
  }

  /** A friend's conversation opens; anyone else is sent a friend request. */
  befriendOrMessage(userId: string): void {
    const friend = this.friends.find((user) => user.id === userId);
    if (friend) return void this.openConversation(friend);
    guard(this.elements.status, async () => {
      const { status } = await this.client.call('friendRequests.create', { user_id: userId });
      this.elements.status.textContent =
        status === 'accepted'
          ? 'You are friends now.'
          : `Friend request sent to ${await this.names.of(userId)}.`;
      await this.refresh();
    });
  }

  async refresh(): Promise<void> {
    const [friends, requests] = await Promise.all([
      this.client.call('friends.list', { limit: 100 }),
      this.client.call('friendRequests.list', { direction: 'incoming', limit: 100 }),
    ]);
    this.friends = friends.items.map(({ user }) => user);
    for (const user of this.friends) this.names.remember(user.id, user.username);
    this.presence.watch(this.friends.map((user) => user.id));
    this.elements.requests.replaceChildren(
      ...requests.items.map(({ user }) => {
        const accept = el('button', { type: 'button' }, 'accept');
        accept.addEventListener('click', () =>
          guard(this.elements.status, async () => {
            await this.client.call('friendRequests.accept', { user_id: user.id });
            await this.refresh();
          }),
        );
        return el('li', { 'data-user-id': user.id }, `${user.username} asks to be friends `, accept);
      }),
    );
    this.render();
    for (const listener of this.changeListeners) listener();
  }

  private render(): void {
    this.elements.friends.replaceChildren(
      ...this.friends.map((user) => {
        const item = el('li', { 'data-user-id': user.id }, userBadge(this.presence, user.id, user.username));
        if (this.unread.has(user.id)) item.append(el('span', { class: 'unread' }, ' new'));
        item.addEventListener('click', () => void this.openConversation(user));
        return item;
      }),
    );
  }

  private async openConversation(peer: SocialUser): Promise<void> {
    this.peer = peer;
    this.unread.delete(peer.id);
    this.render();
    this.shown.clear();
    this.conversationId = undefined;
    this.elements.messages.replaceChildren();
    this.elements.conversation.dataset.peer = peer.id;
    this.elements.conversation.querySelector('h3')?.replaceChildren(`Messages with ${peer.username}`);
    const page = await this.client.call('dm.history', { user_id: peer.id, limit: 30 });
    if (this.peer !== peer) return;
    for (const message of [...page.items].reverse()) this.show(message);
  }

  /** A message of the open conversation is shown (one sent from another tab of yours too); others mark their sender. */
  private received(message: Message): void {
    const ofOpen = message.sender_id === this.peer?.id || message.conversation_id === this.conversationId;
    if (ofOpen) {
      this.show(message);
      return;
    }
    if (message.sender_id && message.sender_id !== this.me.id) {
      this.unread.add(message.sender_id);
      this.render();
    }
  }

  private show(message: Message): void {
    this.conversationId = message.conversation_id;
    if (this.shown.has(message.id)) return;
    this.shown.add(message.id);
    const who = message.sender_id === this.me.id ? 'you' : (this.peer?.username ?? '?');
    appendLine(
      this.elements.messages,
      el('li', {}, `${timeOf(message.created_at)} `, el('b', {}, `${who}:`), ` ${message.body}`),
    );
  }
}
