import { mkdir, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { machineLine } from './backends.js';
import { seedUsers } from './datapath/seed.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { tokenIssuer } from './realtime/tokens.js';
import { Chaos } from './soak/chaos.js';
import { Cluster } from './soak/cluster.js';
import { Ledger } from './soak/ledger.js';
import { Load, type SoakWorld } from './soak/load.js';
import { soakOptions } from './soak/options.js';
import { checkPresence } from './soak/presence.js';
import { checkDelivery, checkServerErrors, checkStored } from './soak/reconcile.js';
import { soakReport } from './soak/report.js';
import { SoakUser } from './soak/soak-user.js';
import { Api } from './worlds/harness.js';

/**
 * The fault soak (`npm run soak`, options in bench/soak/options.ts): three service processes on a
 * private PostgreSQL and Redis under a steady load of presence, direct messages, world chat and
 * chunk writes from thousands of sockets, while nodes are killed and Redis and PostgreSQL
 * restarted; then a reconciliation of the load client's records against the database and each
 * other. Writes bench/results/soak.md. The modules are in bench/soak/.
 */

const progress = (message: string) => console.log(`[bench:soak] ${message}`);
/** Sockets connecting at once while the users come online. */
const CONNECT_CONCURRENCY = 50;
/** After the load: how long the users get to reconnect and their last events to arrive. */
const SETTLE_DEADLINE_MS = 120_000;

async function connectAll(users: readonly SoakUser[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < users.length; index = next++)
      await (users[index] as SoakUser).connectWithRetries();
  };
  await Promise.all(Array.from({ length: CONNECT_CONCURRENCY }, worker));
}

/** Waits until every user still wanted is connected and the events acknowledged so far have arrived. */
async function settle(users: readonly SoakUser[], ledger: Ledger): Promise<void> {
  const deadline = performance.now() + SETTLE_DEADLINE_MS;
  const outstanding = () => {
    const { dms, chats } = checkDelivery(ledger, users, []);
    return users.filter((user) => !user.ready).length + dms.missing + chats.missing;
  };
  while (performance.now() < deadline && outstanding() > 0) await sleep(1_000);
}

export async function run(): Promise<string> {
  const options = soakOptions();
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(`${environment} ${options.sockets} sockets, ${options.minutes} minutes`);
  const cluster = await Cluster.start();
  const ledger = new Ledger();
  const users: SoakUser[] = [];
  try {
    progress('seeding users and starting the nodes...');
    const ids = await seedUsers(cluster.env, options.sockets);
    const [first, ...others] = cluster.nodes;
    if (!first) throw new Error('no nodes');
    // The first node generates the signing keys the others and the token issuer read.
    await cluster.startNode(first);
    await Promise.all(others.map((node) => cluster.startNode(node)));
    const issuer = await tokenIssuer(cluster.dataDir);
    const tokens = await issuer.issueFor(ids);
    await issuer.close();
    const pickNode = () => {
      const up = cluster.up();
      const node = up[Math.floor(Math.random() * up.length)];
      return node && { index: node.index, url: `ws://127.0.0.1:${node.wsPort}/ws` };
    };
    const worldIds: { id: string; roomId: string }[] = [];
    for (let w = 0; w < options.worlds; w++) {
      const api = new Api(`http://127.0.0.1:${first.httpPort}`);
      api.token = tokens[w] as string;
      const world = await api.ok<{ id: string; rooms: { id: string }[] }>('POST', '/api/worlds', {
        name: `Soak harbour ${String.fromCharCode(97 + (w % 26))}${w}`,
        visibility: 'public',
      });
      worldIds.push({ id: world.id, roomId: (world.rooms[0] as { id: string }).id });
    }
    for (let i = 0; i < ids.length; i++) {
      const world = worldIds[i % options.worlds] as { id: string };
      users.push(
        new SoakUser(ids[i] as string, tokens[i] as string, ids[i ^ 1] as string, world.id, ledger, pickNode),
      );
    }
    const worlds: SoakWorld[] = worldIds.map((world, w) => ({ ...world, owner: users[w] as SoakUser }));
    progress(`connecting ${users.length} sockets...`);
    await connectAll(users);
    const connected = users.filter((user) => user.ready).length;
    progress(`${connected} sockets ready; load for ${options.minutes} minutes with chaos`);

    const loadMs = options.minutes * 60_000;
    const load = new Load(users, worlds, cluster, ledger, options);
    const chaos = new Chaos(
      cluster,
      ledger,
      progress,
      (node) => users.filter((user) => user.ready && user.node === node.index).length,
    );
    const loadStarted = performance.now();
    cluster.onLogLine = (_node, line) => ledger.nodeLogged(line);
    ledger.startClock();
    load.start();
    chaos.start(loadMs);
    const ticker = setInterval(() => {
      progress(
        `${((performance.now() - loadStarted) / 1000).toFixed(0)} s: ${users.filter((u) => u.ready).length} ready, ` +
          `nodes up ${cluster
            .up()
            .map((node) => node.index)
            .join(',')}, acked dm ${ledger.dms.length} ` +
          `chat ${ledger.chats.length} chunk ${ledger.revisions.length}, 5xx ${ledger.serverErrors.length}, ` +
          `unanswered ${ledger.unanswered}, reconnects ${ledger.reconnects}, failed connects ` +
          JSON.stringify(Object.fromEntries(ledger.connectFailures)),
      );
    }, 10_000);
    await sleep(loadMs);
    await chaos.stop();
    await load.stop();
    clearInterval(ticker);
    progress('load stopped; letting users reconnect and events arrive...');
    await settle(users, ledger);
    const connectedAtEnd = users.filter((user) => user.ready).length;

    progress('reconciling...');
    const stored = await checkStored(cluster.postgres.url, ledger);
    const delivery = checkDelivery(ledger, users, chaos.faults);
    const serverErrors = checkServerErrors(ledger, chaos.faults);
    progress('checking presence convergence (killing node 0 for good)...');
    const presence = await checkPresence(cluster, users);
    const text = soakReport({
      options,
      command: `npm run soak -- ${process.argv.slice(3).join(' ')}`.trim(),
      environment,
      code: codeLine(before, codeState()),
      connected,
      connectedAtEnd,
      faults: chaos.faults,
      ledger,
      stored,
      delivery,
      presence,
      serverErrors,
      minutes: (performance.now() - started) / 60_000,
    });
    await mkdir('bench/results', { recursive: true });
    await writeFile('bench/results/soak.md', text);
    console.log(text);
    return text;
  } finally {
    for (const user of users) user.close();
    await cluster.stop();
  }
}
