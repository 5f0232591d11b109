import { AtriumClient, type World } from '@atrium/client';
import { BLOCK_TYPES, type BlockType, starterTerrain } from './blocks.js';
import { showConnectionState } from './connection-status.js';
import { el, find, guard } from './dom.js';
import { Names } from './names.js';
import { PartyPanel } from './party.js';
import { PresenceWatch } from './presence.js';
import { Roster } from './roster.js';
import { VoxelScene } from './scene.js';
import { signIn, signOut } from './session.js';
import { SocialPanel } from './social.js';
import { WorldChat } from './world-chat.js';
import { WorldView } from './world-view.js';
import { WorldsPanel } from './worlds.js';

/**
 * The web world: sign in, pick or create a world, build in it with others watching live, chat,
 * see who is there, talk to friends, travel as a party. Everything goes through @atrium/client;
 * the page is served by dev-server.ts, which proxies /api/ to Atrium (the REST API sends no CORS
 * headers) and says where the gateway is.
 */

/** A click that moved less than this is a click; more is the camera being dragged. */
const CLICK_SLOP_PX = 5;

async function start(): Promise<void> {
  const { wsUrl } = (await (await fetch('/config.json')).json()) as { wsUrl: string };
  // A restarted service is found again within a few seconds rather than the default 30 s cap.
  const client = new AtriumClient({
    httpUrl: window.location.origin,
    wsUrl,
    reconnect: { maxDelayMs: 4000 },
  });
  showConnectionState(client, find('#connection'));

  const tokens = await signIn(client, find<HTMLFormElement>('#sign-in'), find('#sign-in-status'));
  const me = tokens.user;
  document.body.dataset.signedIn = me.username;
  find('#me').textContent = me.username;
  find('#my-id').textContent = me.id;
  const signOutButton = find<HTMLButtonElement>('#sign-out');
  signOutButton.hidden = false;
  signOutButton.addEventListener('click', () => void signOut(client));

  const names = new Names(client);
  names.remember(me.id, me.username);
  const presence = new PresenceWatch(client);
  const scene = new VoxelScene(find<HTMLCanvasElement>('#scene'));
  const view = new WorldView(client, me, names, scene, find('#feed'), find('#world-info'));
  const chat = new WorldChat(
    client,
    names,
    find('#chat'),
    find<HTMLFormElement>('#chat-form'),
    find('#chat-status'),
  );
  const social = new SocialPanel(client, me, names, presence, {
    friends: find('#friends'),
    requests: find('#friend-requests'),
    addForm: find<HTMLFormElement>('#add-friend'),
    conversation: find('#conversation'),
    messages: find('#dm-messages'),
    dmForm: find<HTMLFormElement>('#dm-form'),
    status: find('#social-status'),
  });
  const roster = new Roster(me, names, presence, find('#roster'), (userId) =>
    social.befriendOrMessage(userId),
  );
  view.onAuthor((userId) => roster.seen(userId));
  chat.onSender((userId) => roster.seen(userId));

  const openWorld = async (world: World, fresh: boolean) => {
    document.body.dataset.world = world.id;
    roster.open(world);
    const opened = Promise.all([view.open(world), chat.open(world)]);
    // The view holds the world from here: the leader's travel button names it.
    party.worldChanged();
    await opened;
    if (fresh) await view.writeChunks(starterTerrain());
  };
  const party = new PartyPanel(client, me, presence, social, find('#party'), find('#party-status'), {
    currentWorld: () => view.world,
    follow: async (worldId) => {
      if (view.world?.id !== worldId)
        await openWorld(await client.call('worlds.get', { world_id: worldId }), false);
    },
    travelledWith: (userIds) => {
      for (const userId of userIds) roster.seen(userId);
    },
  });
  const worlds = new WorldsPanel(
    client,
    me,
    {
      publicList: find('#public-worlds'),
      ownList: find('#own-worlds'),
      createForm: find<HTMLFormElement>('#create-world'),
      refresh: find<HTMLButtonElement>('#refresh-worlds'),
      status: find('#worlds-status'),
    },
    openWorld,
  );

  let selected: BlockType = 'grass';
  const palette = find('#palette');
  for (const type of BLOCK_TYPES) {
    const swatch = el('button', { type: 'button', 'data-block': type, class: `swatch ${type}` }, type);
    swatch.addEventListener('click', () => {
      selected = type;
      for (const other of palette.children) other.classList.toggle('selected', other === swatch);
    });
    palette.append(swatch);
  }
  (palette.firstElementChild as HTMLElement).classList.add('selected');

  const canvas = find<HTMLCanvasElement>('#scene');
  let down: { x: number; y: number } | undefined;
  canvas.addEventListener('contextmenu', (event) => event.preventDefault());
  canvas.addEventListener('pointerdown', (event) => {
    down = { x: event.clientX, y: event.clientY };
  });
  canvas.addEventListener('pointerup', (event) => {
    const start = down;
    down = undefined;
    if (!start || Math.hypot(event.clientX - start.x, event.clientY - start.y) > CLICK_SLOP_PX) return;
    const picked = scene.pick(event.clientX, event.clientY);
    if (!picked) return;
    const { block, normal } = picked;
    if (event.button === 2 || event.shiftKey) view.remove(block.x, block.y, block.z);
    else if (event.button === 0)
      view.place(block.x + normal.x, block.y + normal.y, block.z + normal.z, selected);
  });
  find('#reset-camera').addEventListener('click', () => scene.resetCamera());

  document.body.dataset.app = 'ready';
  const status = find('#worlds-status');
  guard(status, () => Promise.all([worlds.refresh(), social.refresh(), party.refresh()]));
}

start().catch((error: unknown) => {
  find('#sign-in-status').textContent =
    `The page could not start: ${error instanceof Error ? error.message : String(error)}`;
});
