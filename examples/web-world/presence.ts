import type { AtriumClient } from '@atrium/client';

type Status = 'online' | 'offline' | 'unknown';

/**
 * Who is online, for the users the panels show: subscribed once per user and again on every
 * `ready` (subscriptions belong to a socket), the statuses kept from the acks and `presence` events.
 */
export class PresenceWatch {
  private readonly watched = new Set<string>();
  private readonly statuses = new Map<string, Status>();
  private readonly listeners = new Set<() => void>();

  constructor(private readonly client: AtriumClient) {
    client.on('presence', (event) => this.set({ [event.user_id]: event.status }));
    client.onStateChange((state) => {
      if (state === 'ready' && this.watched.size > 0) void this.subscribe([...this.watched]);
    });
  }

  statusOf(userId: string): Status {
    return this.statuses.get(userId) ?? 'unknown';
  }

  onChange(listener: () => void): void {
    this.listeners.add(listener);
  }

  watch(userIds: string[]): void {
    const fresh = userIds.filter((id) => !this.watched.has(id));
    if (fresh.length === 0) return;
    for (const id of fresh) this.watched.add(id);
    if (this.client.state === 'ready') void this.subscribe(fresh);
  }

  private async subscribe(userIds: string[]): Promise<void> {
    for (let i = 0; i < userIds.length; i += 200) {
      const { presence } = await this.client.call('presence.subscribe', {
        user_ids: userIds.slice(i, i + 200),
      });
      this.set(presence);
    }
  }

  private set(statuses: Record<string, Status>): void {
    for (const [id, status] of Object.entries(statuses)) this.statuses.set(id, status);
    for (const listener of this.listeners) listener();
  }
}

/** A dot and a name, as every panel shows a user. */
export function userBadge(presence: PresenceWatch, userId: string, name: string): HTMLElement {
  const badge = document.createElement('span');
  badge.className = 'user';
  badge.dataset.presence = presence.statusOf(userId);
  badge.textContent = name;
  return badge;
}
