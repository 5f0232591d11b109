import { execFile, spawn } from 'node:child_process';
import { access, cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { PRICE } from '../economy/measure.js';
import { stopChild } from '../realtime/servers.js';
import { BUYERS, CLIQUE, type Population, SELLERS, USERS } from './population.js';
import { progress } from './progress.js';

/**
 * Nakama for the peers bench: built once from the Go module proxy into ~/.cache/atrium-bench (never
 * in the repo, never by npm install), migrated and started on its own database of the local
 * PostgreSQL with the bench's runtime module (bench/peers/nakama-module/index.js).
 */

const run = promisify(execFile);

/** The newest release the Go module proxy serves (it refuses listing versions and v3.41.0+). */
export const NAKAMA_VERSION = '3.40.0';
const MODULE = `github.com/heroiclabs/nakama/v3@v${NAKAMA_VERSION}`;
const GO = process.env.GO ?? '/usr/local/go/bin/go';
const CACHE = join(homedir(), '.cache', 'atrium-bench', `nakama-${NAKAMA_VERSION}`);
const BINARY = join(CACHE, 'nakama');
/** Nakama's defaults: the API and socket on 7350 (gRPC 7349), the console on 7351 (gRPC 7348). */
export const NAKAMA_PORT = 7350;
export const SERVER_KEY = 'defaultkey';

/** The Nakama binary, built with `go build -trimpath` from a writable copy of the downloaded module the first time. */
export async function nakamaBinary(): Promise<string> {
  if (
    await access(BINARY).then(
      () => true,
      () => false,
    )
  )
    return BINARY;
  progress(`building Nakama ${NAKAMA_VERSION} into ${CACHE} (once; a few minutes)...`);
  const { stdout } = await run(GO, ['mod', 'download', '-json', MODULE], { cwd: tmpdir() });
  const { Dir } = JSON.parse(stdout) as { Dir: string };
  const source = join(CACHE, 'src');
  await rm(source, { recursive: true, force: true });
  await mkdir(CACHE, { recursive: true });
  // The module cache is read-only; go build writes go.sum updates next to go.mod.
  await cp(Dir, source, { recursive: true, mode: 0 });
  await run('chmod', ['-R', 'u+w', source]);
  await run(
    GO,
    [
      'build',
      '-trimpath',
      '-ldflags',
      `-X main.version=${NAKAMA_VERSION} -X main.commitID=proxy`,
      '-o',
      BINARY,
      '.',
    ],
    { cwd: source, maxBuffer: 64 * 2 ** 20 },
  );
  await rm(source, { recursive: true, force: true });
  return BINARY;
}

export interface RunningNakama {
  pid: number;
  http: string;
  ws: string;
  stop(): Promise<void>;
}

/** Migrates `database` (user root, trust) and starts Nakama on it with the bench's settings; resolves once /healthcheck answers. */
export async function startNakama(database: string): Promise<RunningNakama> {
  const binary = await nakamaBinary();
  const address = `root@127.0.0.1:5432/${database}`;
  await run(binary, ['migrate', 'up', '--database.address', address]);
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-nakama-'));
  const child = spawn(
    binary,
    [
      '--name',
      'atrium-bench',
      '--database.address',
      address,
      '--data_dir',
      dataDir,
      '--runtime.path',
      resolve('bench/peers/nakama-module'),
      // Its default is 60 s; the bench holds its sessions for the whole run.
      '--session.token_expiry_sec',
      '86400',
      // Its default, 64 messages waiting for a socket, closed the load's sockets (close 1000) in a
      // quiet run's status update row, where each update also sends the sender a presence event.
      // 1,024 is still tighter than Atrium's own slow-consumer limit (WS_MAX_BUFFERED_BYTES, 1 MiB).
      '--socket.outgoing_queue_size',
      '1024',
      '--logger.level',
      'WARN',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const http = `http://127.0.0.1:${NAKAMA_PORT}`;
  const exited = new Promise<never>((_, fail) =>
    child.once('exit', (code) => fail(new Error(`nakama exited with ${code}`))),
  );
  const healthy = (async () => {
    for (;;) {
      const response = await fetch(`${http}/healthcheck`).catch(() => undefined);
      if (response?.status === 200) return;
      await sleep(100);
    }
  })();
  await Promise.race([healthy, exited]);
  return {
    pid: child.pid as number,
    http,
    ws: `ws://127.0.0.1:${NAKAMA_PORT}/ws`,
    async stop() {
      await stopChild(child);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A JSON request to Nakama's REST API with a session token (or the server key, for authentication). */
export async function nakamaCall<T>(
  http: string,
  method: string,
  path: string,
  auth: { token: string } | 'server key',
  body?: unknown,
): Promise<T> {
  const authorization =
    auth === 'server key'
      ? `Basic ${Buffer.from(`${SERVER_KEY}:`).toString('base64')}`
      : `Bearer ${auth.token}`;
  const response = await fetch(`${http}${path}`, {
    method,
    headers: { authorization, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`nakama ${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/** Device authentication (creating the account), as a Nakama client signs in; its session token and user id. */
export async function nakamaUser(http: string, device: string): Promise<{ id: string; token: string }> {
  const { token } = await nakamaCall<{ token: string }>(
    http,
    'POST',
    `/v2/account/authenticate/device?create=true&username=${device}`,
    'server key',
    { id: device },
  );
  const [, payload = ''] = token.split('.');
  const { uid } = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { uid: string };
  return { id: uid, token };
}

/** Runs `task` on each item, `concurrency` at a time; the answers in item order. */
async function eachLimited<T, R>(items: readonly T[], concurrency: number, task: (item: T) => Promise<R>) {
  const answers: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      answers[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return answers;
}

/**
 * The population through Nakama's API: device accounts, friend requests both ways among the
 * clique, an open group everyone joins, wallets funded by the module's grant rpc; and a device
 * account per socket of the connect row (Nakama accepts only tokens of sessions it issued).
 */
export async function seedNakama(http: string, connectSockets: number): Promise<Population> {
  const device = (label: string, i: number) => `bench-${label}-${String(i).padStart(6, '0')}`;
  const users = await eachLimited(
    Array.from({ length: USERS }, (_, i) => i),
    20,
    (i) => nakamaUser(http, device('user', i)),
  );
  const clique = users.slice(0, CLIQUE);
  for (const user of clique) {
    const others = clique.filter((other) => other !== user).map((other) => `ids=${other.id}`);
    await nakamaCall(http, 'POST', `/v2/friend?${others.join('&')}`, user);
  }
  const owner = users[0] as { id: string; token: string };
  const group = await nakamaCall<{ id: string }>(http, 'POST', '/v2/group', owner, {
    name: 'bench peers',
    open: true,
    max_count: 100_000,
  });
  await eachLimited(users.slice(1), 20, (user) =>
    nakamaCall(http, 'POST', `/v2/group/${group.id}/join`, user),
  );
  const buyers = users.slice(0, BUYERS);
  const sellers = users.slice(BUYERS, BUYERS + SELLERS);
  for (const buyer of buyers)
    await nakamaCall(http, 'POST', '/v2/rpc/grant?unwrap=true', buyer, { amount: 1e12 });
  const started = performance.now();
  const connect = await eachLimited(
    Array.from({ length: connectSockets }, (_, i) => i),
    50,
    (i) => nakamaUser(http, device('socket', i)),
  );
  progress(
    `nakama: ${connectSockets} device accounts for the connect row in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  return {
    users,
    groupId: group.id,
    purchases: sellers.flatMap((seller) =>
      buyers.map((buyer) => ({
        token: buyer.token,
        body: { seller_id: seller.id, item_id: `item-${seller.id}`, price: PRICE },
      })),
    ),
    connectTokens: connect.map((user) => user.token),
  };
}
