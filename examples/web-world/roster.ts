import type { World } from '@atrium/client';
import { el } from './dom.js';
import type { Names } from './names.js';
import { type PresenceWatch, userBadge } from './presence.js';

/**
 * Who is in the open world. The service keeps no list of a world's visitors for its readers, so
 * this is who the page has seen here: the owner, you, whoever chatted or built while you watched,
 * and the party members that travelled with you, each with their presence (online or not).
 */
export class Roster {
  private world: World | undefined;
  private readonly people = new Set<string>();

  constructor(
    private readonly me: { id: string },
    private readonly names: Names,
    private readonly presence: PresenceWatch,
    private readonly list: HTMLElement,
    private readonly onPick: (userId: string) => void,
  ) {
    presence.onChange(() => this.render());
  }

  open(world: World): void {
    this.world = world;
    this.people.clear();
    this.seen(world.owner_id);
    this.seen(this.me.id);
  }

  seen(userId: string): void {
    if (!this.world || this.people.has(userId)) return;
    this.people.add(userId);
    this.presence.watch([userId]);
    this.render();
  }

  private render(): void {
    const world = this.world;
    this.list.replaceChildren();
    if (!world) return;
    for (const id of this.people) {
      const item = el('li', { 'data-user-id': id });
      void this.names.of(id).then((name) => {
        const role = id === world.owner_id ? ' (owner)' : id === this.me.id ? ' (you)' : '';
        const badge = userBadge(this.presence, id, `${name}${role}`);
        const actions = id === this.me.id ? [] : [el('button', { type: 'button' }, 'befriend / message')];
        actions[0]?.addEventListener('click', () => this.onPick(id));
        item.replaceChildren(badge, ...actions);
      });
      this.list.append(item);
    }
  }
}
