import type { AtriumClient, Party, PartyInviteEvent } from '@atrium/client';
import { el, guard } from './dom.js';
import type { PresenceWatch } from './presence.js';
import { userBadge } from './presence.js';
import type { SocialPanel } from './social.js';

/**
 * Parties (docs/parties.md): create one, invite friends, accept an invitation, and travel together.
 * The leader brings the party into the open world with `worlds.join {party: true}`, which places
 * every online member on one game server; each other member's page gets `party.follow` once that
 * server is ready, opens the same world and joins that server (`worlds.join {server_id}`).
 */
export class PartyPanel {
  private party: Party | undefined;
  private readonly invites = new Map<string, PartyInviteEvent>();

  constructor(
    private readonly client: AtriumClient,
    private readonly me: { id: string },
    private readonly presence: PresenceWatch,
    private readonly social: SocialPanel,
    private readonly root: HTMLElement,
    private readonly status: HTMLElement,
    private readonly travel: {
      /** The world open now, which the leader may bring the party into. */
      currentWorld: () => { id: string; name: string } | undefined;
      /** Opens a world the party was taken to. */
      follow: (worldId: string) => Promise<void>;
      /** The members placed in the world with the caller: the roster lists them. */
      travelledWith: (userIds: string[]) => void;
    },
  ) {
    client.on('party.updated', ({ party }) =>
      this.set(party.members.some((m) => m.user_id === me.id) ? party : undefined),
    );
    client.on('party.ended', () => this.set(undefined));
    client.on('party.invite', (invite) => {
      this.invites.set(invite.party_id, invite);
      this.render();
    });
    client.on('party.follow', ({ world_id, server_id }) =>
      guard(this.status, async () => {
        await this.travel.follow(world_id);
        const joined = await client.call('worlds.join', { world_id, server_id });
        this.travel.travelledWith(this.party?.members.map((member) => member.user_id) ?? []);
        this.status.textContent = `Travelled with your party: server ${joined.address}.`;
      }),
    );
    client.onMissedEvents((missed) => {
      if (missed.stream === 'user') void this.refresh();
    });
    presence.onChange(() => this.render());
    social.onChange(() => this.render());
  }

  async refresh(): Promise<void> {
    try {
      this.set(await this.client.call('parties.mine'));
    } catch (error) {
      if ((error as { code?: string }).code !== 'NOT_FOUND') throw error;
      this.set(undefined);
    }
  }

  private set(party: Party | undefined): void {
    this.party = party;
    if (party) this.presence.watch(party.members.map((member) => member.user_id));
    this.render();
  }

  private button(label: string, action: () => Promise<unknown>): HTMLButtonElement {
    const button = el('button', { type: 'button' }, label);
    button.addEventListener('click', () => guard(this.status, action));
    return button;
  }

  private render(): void {
    const party = this.party;
    const invites = [...this.invites.values()].filter((invite) => invite.party_id !== party?.id);
    const invitations = invites.map((invite) =>
      el(
        'li',
        { 'data-party-id': invite.party_id },
        `${invite.from.username} invites you `,
        this.button('join', async () => {
          if (this.party) await this.client.call('parties.leave', { party_id: this.party.id });
          this.set(await this.client.call('parties.join', { party_id: invite.party_id }));
          this.invites.delete(invite.party_id);
        }),
      ),
    );
    if (!party) {
      this.root.replaceChildren(
        el('p', {}, 'You are in no party.'),
        this.button('create a party', async () => this.set(await this.client.call('parties.create', {}))),
        el('ul', {}, ...invitations),
      );
      return;
    }
    const leads = party.leader_id === this.me.id;
    const members = party.members.map((member) =>
      el(
        'li',
        { 'data-user-id': member.user_id },
        userBadge(this.presence, member.user_id, member.username),
        member.user_id === party.leader_id ? ' (leader)' : '',
      ),
    );
    const inParty = new Set(party.members.map((member) => member.user_id));
    const invitable = this.social.friends.filter((friend) => !inParty.has(friend.id));
    const pick = el(
      'select',
      { name: 'friend' },
      ...invitable.map((f) => el('option', { value: f.id }, f.username)),
    );
    const world = this.travel.currentWorld();
    this.root.replaceChildren(
      el('ul', {}, ...members),
      invitable.length > 0
        ? el(
            'p',
            {},
            pick,
            this.button('invite', async () => {
              await this.client.call('parties.invite', { party_id: party.id, user_id: pick.value });
              this.status.textContent = 'Invitation sent.';
            }),
          )
        : el('p', {}, 'Friends you add can be invited here.'),
      leads && world
        ? this.button(`bring the party to ${world.name}`, async () => {
            this.status.textContent = 'Starting a game server for the party…';
            const joined = await this.client.call('worlds.join', { world_id: world.id, party: true });
            const placed = joined.party_placement?.user_ids ?? [];
            this.travel.travelledWith(placed);
            this.status.textContent = `${placed.length} of you travel together: server ${joined.address}.`;
          })
        : el(
            'p',
            {},
            leads ? 'Open a world to bring the party there.' : 'The leader takes the party to worlds.',
          ),
      this.button('leave the party', async () => {
        await this.client.call('parties.leave', { party_id: party.id });
        this.set(undefined);
      }),
      el('ul', {}, ...invitations),
    );
  }

  /** The world view changed: the leader's travel button names the open world. */
  worldChanged(): void {
    this.render();
  }
}
