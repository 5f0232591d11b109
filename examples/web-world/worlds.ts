import type { AtriumClient, World, WorldVisibility } from '@atrium/client';
import { el, guard } from './dom.js';

/**
 * The worlds to open: public ones (discovery's search, newest first) and the caller's own, which
 * no route lists: this page remembers the ids of the worlds it created, per user, in localStorage.
 */
export class WorldsPanel {
  private readonly storageKey: string;

  constructor(
    private readonly client: AtriumClient,
    me: { id: string },
    private readonly elements: {
      publicList: HTMLElement;
      ownList: HTMLElement;
      createForm: HTMLFormElement;
      refresh: HTMLButtonElement;
      status: HTMLElement;
    },
    private readonly open: (world: World, fresh: boolean) => Promise<void>,
  ) {
    this.storageKey = `atrium-web-world:worlds:${me.id}`;
    elements.refresh.addEventListener('click', () => guard(elements.status, () => this.refresh()));
    elements.createForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const form = elements.createForm;
      const name = (form.elements.namedItem('name') as HTMLInputElement).value.trim();
      const visibility = (form.elements.namedItem('visibility') as HTMLSelectElement)
        .value as WorldVisibility;
      if (!name) return;
      guard(elements.status, async () => {
        const world = await client.call('worlds.create', { name, visibility });
        this.remember(world.id);
        await this.open(world, true);
        await this.refresh();
      });
    });
  }

  async refresh(): Promise<void> {
    const [found, own] = await Promise.all([
      this.client.call('discovery.search', { sort: 'new', limit: 20 }),
      Promise.all(
        this.ownIds().map((id) => this.client.call('worlds.get', { world_id: id }).catch(() => undefined)),
      ),
    ]);
    this.elements.publicList.replaceChildren(
      ...found.items.map((world) => this.item(world.world_id, world.title, `${world.visit_count} visits`)),
    );
    this.elements.ownList.replaceChildren(
      ...own
        .filter((world) => world !== undefined)
        .map((world) => this.item(world.id, world.name, world.visibility)),
    );
  }

  private item(worldId: string, name: string, detail: string): HTMLElement {
    const item = el('li', { 'data-world-id': worldId }, el('span', { class: 'name' }, name), ` ${detail}`);
    item.addEventListener('click', () =>
      guard(this.elements.status, async () =>
        this.open(await this.client.call('worlds.get', { world_id: worldId }), false),
      ),
    );
    return item;
  }

  private ownIds(): string[] {
    return JSON.parse(localStorage.getItem(this.storageKey) ?? '[]') as string[];
  }

  private remember(worldId: string): void {
    localStorage.setItem(this.storageKey, JSON.stringify([worldId, ...this.ownIds()].slice(0, 20)));
  }
}
