import { parseArgs } from 'node:util';

/**
 * Benchmark runner. Usage: `npm run bench [-- [scenario] [--seconds N]]`. The scenarios that take
 * --backends also take --compiled: `npm run build` first, then the service from dist/ as production
 * runs it (by default they run the sources through tsx, so a stale build never decides a figure).
 *   (none) | foundation   cold start, /healthz throughput, gateway ping (bench/results/foundation.md)
 *   auth                  login, refresh and token verification cost (bench/results/auth.md)
 *   realtime              idle sockets per instance, heartbeat frames/s and REST heartbeats in rounds
 *                         interleaved with bare uWS and Fastify (bench/results/realtime.md); also takes
 *                         --connections N (default 18000) and --phases single,bare,cluster (what each
 *                         covers: bench/realtime/options.ts); --seconds is the measured time per server
 *   node-flags            REST heartbeats after a quiet spell and idle-socket memory with different V8
 *                         young-generation flags (bench/results/node-flags.md); also takes --connections N
 *   embedded-start        embedded mode's first start (cluster cache absent, present) and restart: time
 *                         to /healthz 200, RSS at rest and peak (bench/results/embedded-start.md); takes
 *                         --runs N, not --seconds
 *   datapath              GET /api/users/me, presence.status frames and PUT /api/avatar/loadout beside
 *                         bare Fastify/uWS + pg and pgbench ceilings (bench/results/datapath.md); also
 *                         takes --backends embedded,postgres and --profile DIR
 *   worlds                room content loads (REST, socket) beside plain SQL, batch writes, chunk PUTs,
 *                         co-editing across two instances, history pages over 1,000,000 revisions
 *                         (bench/results/worlds.md); also takes --backends embedded,postgres
 *   worlds-rollback       a rollback of 1,000 chunks of 1 MiB: duration, RSS growth, worst /healthz
 *                         (bench/results/worlds-rollback.md); also takes --backends embedded,postgres
 *   chat                  direct messages: latency across two instances at 1,000/s, dm.send frames and
 *                         REST sends beside a pgbench ceiling, history pages beside pgbench running
 *                         the page's SELECT, recovery of 1,000 missed events
 *                         (bench/results/chat.md); also takes --backends embedded,postgres
 *   gameservers           spawn-to-ready with the reference server, join latency, internal bulk
 *                         loads beside the users' REST load (bench/results/gameservers.md); also
 *                         takes --backends embedded,postgres
 *   groups                roster pages of a 10,000-member group and joins beside pgbench, group chat
 *                         latency with 500 members online on two instances (bench/results/groups.md);
 *                         also takes --backends embedded,postgres
 *   parties               joins and leaves of open parties from one client and 50 beside pgbench, and
 *                         party.updated to 8 members' sockets on one and two instances
 *                         (bench/results/parties.md); also takes --backends embedded,postgres
 *   economy               purchases/s of 50 REST buyers beside pgbench running the purchase's
 *                         statements, economy verify after them, and a purchase load killed with
 *                         SIGKILL (bench/results/economy.md); Postgres + Redis only
 *   discovery             search pages of 100,000 public worlds (text, tag, each sort) beside pgbench,
 *                         joins of a hot world beside pgbench with and without the visit, fold and
 *                         ranking durations (bench/results/discovery.md); also takes --backends
 *                         embedded,postgres
 *   leaderboards          top and around-me pages of a 1,000,000-record board and submissions beside a
 *                         bare Redis + `pg` script (bench/results/leaderboards.md); also takes
 *                         --backends embedded,postgres and --profile DIR
 *   webhooks              deliveries/s of the webhook delivery job beside a bare node:http script posting
 *                         the same signed bodies, the outbox lag at 500 events/s (Postgres), the inbox
 *                         list and unread count of a user with 1,000 notifications beside bare Fastify
 *                         + `pg` (bench/results/webhooks.md); also takes --backends embedded,postgres and
 *                         --profile DIR
 *   workers               WORKERS=2 beside WORKERS=1 on Postgres + Redis: GET /api/users/me and
 *                         heartbeat frames, the ratio and the load client's CPU (bench/results/workers.md)
 *   extensions            the hook path's cost: CPU per call of GET /api/users/me and REST dm.send
 *                         without extensions, with hooks on other operations and with a no-op before
 *                         hook, and an echo rpc beside GET me and ping frames (bench/results/extensions.md);
 *                         also takes --backends embedded,postgres and --base DIR (another checkout's
 *                         service in the same rounds, e.g. the commit before extensions)
 *   peers                 Atrium beside Nakama 3.40 (built once into ~/.cache/atrium-bench) on the same
 *                         PostgreSQL: socket frames, REST reads and writes, DMs, group chat, a purchase, an
 *                         echo rpc, connect + authenticate, memory per socket and at rest, with one process
 *                         and a worker per core (bench/results/peers.md); --seconds is each window; also
 *                         takes --rounds N (3), --sockets N (15000) and --connect-in-flight N (200)
 *   connect               connect + authenticate N sockets on Postgres + Redis beside a bare uWS server
 *                         acking the auth frame, in interleaved rounds (bench/results/connect.md); takes
 *                         --sockets N (5000), --in-flight N (200), --rounds N (5), --env KEY=VALUE,...
 *                         (the service's settings), --profile DIR and --compiled, not --seconds
 *   failover              the Redis primary killed behind Sentinels: seconds of 503 and until events
 *                         reach an open socket again (bench/results/failover.md)
 *   soak                  the fault soak, also `npm run soak`: three nodes on a private PostgreSQL and
 *                         Redis, thousands of sockets under load while nodes are killed and Redis and
 *                         PostgreSQL restarted, then a reconciliation (bench/results/soak.md); takes
 *                         --minutes, --sockets and the rates of bench/soak/options.ts, not --seconds
 */
const scenarios: Record<string, () => Promise<{ run(seconds: number): Promise<string> }>> = {
  foundation: () => import('./foundation.js'),
  auth: () => import('./auth.js'),
  realtime: () => import('./realtime.js'),
  'node-flags': () => import('./node-flags.js'),
  'embedded-start': () => import('./embedded-start.js'),
  datapath: () => import('./datapath.js'),
  worlds: () => import('./worlds.js'),
  'worlds-rollback': () => import('./worlds-rollback.js'),
  chat: () => import('./chat.js'),
  gameservers: () => import('./gameservers.js'),
  groups: () => import('./groups.js'),
  parties: () => import('./parties.js'),
  economy: () => import('./economy.js'),
  discovery: () => import('./discovery.js'),
  leaderboards: () => import('./leaderboards.js'),
  webhooks: () => import('./webhooks.js'),
  workers: () => import('./workers.js'),
  extensions: () => import('./extensions.js'),
  peers: () => import('./peers.js'),
  connect: () => import('./connect.js'),
  failover: () => import('./failover.js'),
  soak: () => import('./soak.js'),
};

const { values, positionals } = parseArgs({
  options: { seconds: { type: 'string' } },
  allowPositionals: true,
  strict: false,
});
const seconds = Number(values.seconds) || 10;
const name = positionals[0] ?? 'foundation';
const load = scenarios[name];
if (!load) {
  console.error(`Unknown benchmark "${name}"; choose one of: ${Object.keys(scenarios).join(', ')}.`);
  process.exit(2);
}
await (await load()).run(seconds);
