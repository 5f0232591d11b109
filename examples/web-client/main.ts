import { AtriumClient, type EventPayloads } from '@atrium/client';
import { decodeChunk, encodeChunk } from '@atrium/client/chunk-codec';

/**
 * Two users in one page, through @atrium/client: they register, connect, one sends the other a
 * direct message and sees the other come online, then loads a room's chunks. Each step is
 * written to the page (`#log`, `#steps li[data-step]`) and the outcome to `body[data-status]`, so
 * a person and test/clients/browser.test.ts read the same thing.
 */

const EVENT_TIMEOUT_MS = 10_000;

const logElement = document.querySelector('#log') as HTMLPreElement;
const stepsElement = document.querySelector('#steps') as HTMLOListElement;

function log(line: string): void {
  logElement.textContent += `${line}\n`;
}

function done(step: string, description: string): void {
  const item = document.createElement('li');
  item.dataset.step = step;
  item.textContent = description;
  stepsElement.append(item);
  log(`ok: ${description}`);
}

/** The next event of `type` that `match` accepts, or a failure naming what did not come. */
function nextEvent<T extends keyof EventPayloads>(
  client: AtriumClient,
  type: T,
  match: (payload: EventPayloads[T]) => boolean,
  what: string,
): Promise<EventPayloads[T]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no ${what} within ${EVENT_TIMEOUT_MS} ms`));
    }, EVENT_TIMEOUT_MS);
    const off = client.on(type, (payload) => {
      if (!match(payload)) return;
      clearTimeout(timer);
      off();
      resolve(payload);
    });
  });
}

function randomName(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return `${prefix}_${Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

async function register(client: AtriumClient, prefix: string) {
  return client.call('auth.register', {
    username: randomName(prefix),
    password: 'correct horse battery',
    accept_terms: true,
    confirm_18_plus: true,
  });
}

async function run(): Promise<void> {
  // The page is served by serve.ts, which proxies /api/ to Atrium (same origin: the API sends no
  // CORS headers) and says where the gateway is.
  const { wsUrl } = (await (await fetch('/config.json')).json()) as { wsUrl: string };
  const httpUrl = window.location.origin;
  log(`REST through ${httpUrl}/api, gateway at ${wsUrl}`);

  const alice = new AtriumClient({ httpUrl, wsUrl });
  const bob = new AtriumClient({ httpUrl, wsUrl });
  try {
    const [aliceTokens, bobTokens] = await Promise.all([register(alice, 'alice'), register(bob, 'bob')]);
    const bobId = bobTokens.user.id;
    done('registered', `registered ${aliceTokens.user.username} and ${bobTokens.user.username}`);

    // Alice follows Bob's presence before he connects. Presence is visible to everyone by default
    // (a profile's presence_visibility may narrow it to friends or nobody).
    alice.setAccessToken(aliceTokens.access_token);
    await alice.ready();
    const subscribed = await alice.call('presence.subscribe', { user_ids: [bobId] });
    log(`Alice subscribed to Bob's presence: ${subscribed.presence[bobId]}`);
    const bobOnline = nextEvent(
      alice,
      'presence',
      (event) => event.user_id === bobId && event.status === 'online',
      'presence event of Bob coming online',
    );
    bob.setAccessToken(bobTokens.access_token);
    await bob.ready();
    done('connected', 'both sockets connected and authenticated');
    await bobOnline;
    done('presence-seen', 'Alice saw Bob come online');

    const received = nextEvent(
      bob,
      'dm.message',
      (message) => message.sender_id === aliceTokens.user.id,
      'direct message from Alice',
    );
    await alice.call('dm.send', { user_id: bobId, body: 'Hello Bob, from a browser' });
    const message = await received;
    done('dm-received', `Bob received "${message.body}"`);

    const world = await alice.call('worlds.create', { name: 'Web client world' });
    const room = await alice.call('rooms.create', { world_id: world.id, name: 'lobby' });
    const chunk = {
      objects: [
        {
          id: 'tree-1',
          asset_id: 'asset.tree.oak',
          position: Float32Array.of(1, 0, 2),
          rotation: Float32Array.of(0, 0, 0, 1),
          scale: Float32Array.of(1, 1, 1),
        },
      ],
    };
    await alice.call('chunks.put', {
      world_id: world.id,
      room_id: room.id,
      x: 0,
      y: 0,
      z: 0,
      // The frame's schema types its bytes as backed by an ArrayBuffer; encodeChunk's may view any buffer.
      payload: new Uint8Array(encodeChunk(chunk)),
      expected_revision: null,
    });
    // The pages of a load arrive as chunks.page events before its ack; this page runs one load.
    const loaded: EventPayloads['chunks.page']['chunks'] = [];
    const offPages = alice.on('chunks.page', (page) => loaded.push(...page.chunks));
    const summary = await alice.call('chunks.load', { world_id: world.id, room_id: room.id });
    offPages();
    const objects = loaded.flatMap(({ payload }) => decodeChunk(payload).objects.map((object) => object.id));
    if (summary.count !== 1 || objects.join() !== 'tree-1')
      throw new Error(`loaded ${summary.count} chunk(s) with objects [${objects}], expected one with tree-1`);
    done('chunks-loaded', `loaded room "${room.name}": ${summary.count} chunk holding ${objects.join(', ')}`);
  } finally {
    alice.close();
    bob.close();
  }
}

run().then(
  () => {
    document.body.dataset.status = 'passed';
  },
  (error: unknown) => {
    const code = typeof error === 'object' && error !== null && 'code' in error ? ` [${error.code}]` : '';
    log(`failed${code}: ${error instanceof Error ? error.message : String(error)}`);
    document.body.dataset.status = 'failed';
  },
);
