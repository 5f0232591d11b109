#!/usr/bin/env node
// The reference dedicated game server (docs/gameservers.md). It shows the whole contract a game
// server follows, in one small program without a game in it:
//   1. parse the launch arguments: --api-url, --server-token, --world-id, and --port (local spawner);
//      a Fleet server under Agones reads them from its GameServer's annotations once allocated;
//   2. load its world through the internal API with its token: the world, its rooms, each room's
//      chunks in bulk (application/msgpack);
//   3. listen for players, then report ready with its address (PUT /internal/servers/self/status);
//   4. follow its world's chunk commits over the gateway (--ws-url), with the same token;
//      keep reporting its player count; a 401 means its token was revoked (the server was stopped
//      or failed): it exits. It also exits at the end of stdin (the service that started it died)
//      and on SIGTERM;
//   5. under Agones (AGONES_SDK_GRPC_PORT set) it also calls the SDK's ready() and health(), and
//      reports the GameServer's address and port.
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import { decode, encode } from '@msgpack/msgpack';
import WebSocket from 'ws';

const { values } = parseArgs({
  options: {
    'api-url': { type: 'string' },
    'server-token': { type: 'string' },
    'world-id': { type: 'string' },
    port: { type: 'string' },
    'ws-url': { type: 'string' },
    'wait-for-allocation': { type: 'boolean' },
  },
  strict: false,
});
const REPORT_EVERY_MS = Number(process.env.REPORT_EVERY_MS ?? 5000);
// The port to listen on: --port from the local spawner, else PORT, else the container port.
const port = Number(values.port ?? process.env.PORT ?? 7777);

/** The SDK when running under Agones (its sidecar sets AGONES_SDK_GRPC_PORT), else undefined. */
async function agones() {
  if (!process.env.AGONES_SDK_GRPC_PORT) return undefined;
  const { default: AgonesSDK } = await import('@google-cloud/agones-sdk');
  const sdk = new AgonesSDK();
  await sdk.connect();
  return sdk;
}

/** A map of the SDK's GameServer object (protobuf `*Map` fields are [key, value] pairs). */
const entries = (pairs) => Object.fromEntries(pairs ?? []);

/**
 * A Fleet server (the agones spawner's allocate mode) starts with no world: it says it is Ready so
 * it can be allocated, then waits for its GameServer to be Allocated and reads the atrium.dev/*
 * annotations the allocation put there.
 */
function allocation(sdk) {
  return new Promise((resolve, reject) => {
    sdk.watchGameServer((gameServer) => {
      const annotations = entries(gameServer.objectMeta?.annotationsMap);
      if (gameServer.status?.state === 'Allocated' && annotations['atrium.dev/server-token'])
        resolve(annotations);
    }, reject);
    sdk.ready().catch(reject);
  });
}

const sdk = await agones();
let apiUrl = values['api-url'];
let token = values['server-token'];
let worldId = values['world-id'];
let wsUrl = values['ws-url'];
if (sdk && (values['wait-for-allocation'] || !token)) {
  const annotations = await allocation(sdk);
  apiUrl = annotations['atrium.dev/api-url'];
  token = annotations['atrium.dev/server-token'];
  worldId = annotations['atrium.dev/world-id'];
  wsUrl = annotations['atrium.dev/ws-url'];
}
if (!apiUrl || !token || !worldId) {
  console.error('usage: server.mjs --api-url <url> --server-token <token> --world-id <id> [--port <n>]');
  process.exit(2);
}

/** Where players connect: Agones' node address and port, or PUBLIC_HOST and the local port. */
async function publicAddress() {
  if (!sdk) return `${process.env.PUBLIC_HOST ?? '127.0.0.1'}:${port}`;
  const { status } = await sdk.getGameServer();
  return `${status.address}:${status.portsList[0].port}`;
}

class Revoked extends Error {}

async function call(path, init = {}) {
  const response = await fetch(new URL(path, apiUrl), {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
  });
  if (response.status === 401) throw new Revoked('the server token was revoked');
  if (!response.ok)
    throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${await response.text()}`);
  return response;
}

async function loadWorld() {
  const world = await (await call(`/internal/worlds/${worldId}`)).json();
  let chunks = 0;
  let bytes = 0;
  for (const room of world.rooms) {
    const response = await call(`/internal/worlds/${worldId}/rooms/${room.id}/chunks`);
    const content = decode(new Uint8Array(await response.arrayBuffer()));
    chunks += content.count;
    for (const chunk of content.chunks) bytes += chunk.payload.byteLength;
  }
  console.log(`loaded world ${world.name}: ${world.rooms.length} rooms, ${chunks} chunks, ${bytes} bytes`);
  return world;
}

const players = new Set();
const game = createServer((socket) => {
  players.add(socket);
  socket.on('close', () => players.delete(socket));
  socket.on('error', () => socket.destroy());
  socket.end(`atrium example server for world ${worldId}\n`);
});

let address;
async function report(ready) {
  await call('/internal/servers/self/status', {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ready, address, players: players.size }),
  });
}

/**
 * Follows the world's commits over the gateway, authenticated with the server token: each
 * `chunks.commit` carries the revisions to apply (a real server would update its simulation). A
 * `chunks.resync` means commits were skipped: reload the world. Closed with 4403, the server was
 * stopped (its token is dead): exit. Any other close: reconnect.
 */
function followChunks() {
  if (!wsUrl) return;
  const socket = new WebSocket(wsUrl);
  const send = (t, id, d) => socket.send(encode({ t, id, d }));
  socket.on('open', () => send('auth', 1, { token }));
  socket.on('message', (data) => {
    const frame = decode(data);
    if (frame.t === 'ack' && frame.id === 1) send('chunks.subscribe', 2, { world_id: worldId });
    else if (frame.t === 'ack' && frame.id === 2)
      console.log(`following world ${worldId} from content revision ${frame.d.content_revision}`);
    else if (frame.t === 'chunks.commit')
      console.log(
        `applied commit: content revision ${frame.d.content_revision}, ${frame.d.revisions.length} chunks`,
      );
    else if (frame.t === 'chunks.resync') loadWorld().catch((error) => console.error(error.message));
    else if (frame.t === 'error') console.error(`gateway: ${frame.code} ${frame.message}`);
  });
  socket.on('error', (error) => console.error(`gateway: ${error.message}`));
  socket.on('close', (code) => {
    if (code === 4403) shutdown(0);
    else setTimeout(followChunks, 1000);
  });
}

function shutdown(code) {
  game.close();
  for (const socket of players) socket.destroy();
  process.exit(code);
}

process.on('SIGTERM', () => shutdown(0));
process.stdin.on('end', () => shutdown(0));
process.stdin.resume();

try {
  await loadWorld();
  await new Promise((resolve, reject) => {
    game.once('error', reject);
    game.listen(port, '0.0.0.0', resolve);
  });
  followChunks();
  address = await publicAddress();
  await report(true);
  // Under the create mode, Agones' Ready is the service's signal too (a Fleet server said it already).
  await sdk?.ready();
  console.log(`ready at ${address}`);
  setInterval(() => {
    sdk?.health();
    report(true).catch((error) => {
      if (error instanceof Revoked) shutdown(0);
      else console.error(error.message);
    });
  }, REPORT_EVERY_MS);
} catch (error) {
  console.error(error.message);
  shutdown(error instanceof Revoked ? 0 : 1);
}
