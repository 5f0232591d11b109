import { randomBytes } from 'node:crypto';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { silentCommand } from '../../test/gameservers/fixtures/launches.js';
import type { Backend } from '../backends.js';
import { POOL_SIZE } from '../datapath/measure.js';
import { type Compared, compare, pgbenchCeilings, postgresVersion } from '../groups/measure.js';
import { progress } from '../realtime/progress.js';
import { REST_CONNECTIONS } from '../realtime/rest-load.js';
import type { RoundSchedule } from '../realtime/rounds.js';
import { type Atrium, startAtrium, stopAtrium } from '../realtime/servers.js';
import { type TokenIssuer, tokenIssuer } from '../realtime/tokens.js';
import type { Latency } from '../worlds/harness.js';
import { withBackend } from '../worlds/measure.js';
import { joinLeaveScript, LOCK_PREFIX } from './ceiling.js';
import { type FanoutResults, measureFanout } from './fanout.js';
import { joinLeaveAlone, joinLeaveCycles, type PartyChange } from './joins.js';
import { measurePlacement, type PlacementResults } from './placement.js';
import { seedParties } from './seed.js';

/**
 * One backend's measurements: join-and-leave cycles beside pgbench, and `party.updated` to the
 * members' sockets on one instance; on Postgres + Redis also across two. pgbench runs as in the
 * groups benchmark (bench/groups/measure.ts): with the service's pool size and with as many
 * clients as the load has connections on Postgres, one client on a copy of the embedded database.
 */

/**
 * The pool of the groups benchmark; an offline grace of a day, since the seeded members hold no
 * socket and the sweep would otherwise remove them (and end their parties) a minute in.
 */
export const PARTIES_ENV = { DATABASE_POOL_SIZE: String(POOL_SIZE), PARTY_OFFLINE_GRACE_SECONDS: '86400' };

/** The game servers of measurement 3: local processes of the tests' fake server, room for all. */
const gameServersEnv = () => ({
  GAMESERVER_COMMAND: silentCommand().command,
  GAMESERVER_MAX_PLAYERS: '100000',
});

export interface PartiesResults {
  database: string;
  pgbenchClients: number[];
  /** One client, one request at a time. */
  alone: Record<PartyChange, Latency>;
  cycles: Compared;
  /** One instance; on Postgres + Redis then two. */
  fanout: FanoutResults[];
  /** Postgres + Redis: a party's placement on a game server beside a plain join. */
  placement?: PlacementResults;
}

const wsUrl = (atrium: Atrium) => `ws://127.0.0.1:${atrium.wsPort}/ws`;

export function measureParties(
  backend: Backend,
  schedule: RoundSchedule,
  seconds: number,
  nodeArgs?: readonly string[],
): Promise<PartiesResults> {
  return withBackend(backend, async (baseEnv, dataDir) => {
    // Ids of this run only: Redis (event histories) outlives the run's database.
    const prefix = randomBytes(4).toString('hex');
    const env: Record<string, string> = { ...baseEnv, ...PARTIES_ENV, ...gameServersEnv() };
    progress(`${backend}: seeding users and parties through the parties repository...`);
    const seed = await seedParties(env, prefix);
    let a: Atrium | undefined;
    let issuer: TokenIssuer | undefined;
    try {
      const copy = join(dataDir, 'ceiling-pgdata');
      if (backend === 'embedded') await cp(join(dataDir, 'pgdata'), copy, { recursive: true });
      const clients = backend === 'postgres' ? [POOL_SIZE, REST_CONNECTIONS] : [1];
      const pgbench = pgbenchCeilings(clients, env.DATABASE_URL, copy);
      a = await startAtrium(env, nodeArgs);
      issuer = await tokenIssuer(dataDir);
      const { placement: placed } = seed;
      const users = [
        ...seed.joiners,
        ...seed.fanout.flatMap((party) => [party.mover, ...party.seated]),
        ...placed.parties.flatMap((party) => [party.leader, ...party.members]),
        ...placed.plainJoiners,
      ];
      const tokens = await issuer.issueFor(users);
      const tokenOf = new Map(users.map((user, i) => [user, tokens[i] as string]));
      const joinerTokens = tokens.slice(0, seed.joiners.length);
      const database = backend === 'postgres' ? await postgresVersion(env.DATABASE_URL as string) : 'PGlite';

      progress(
        `${backend}: one client joining and leaving parties, then ${REST_CONNECTIONS} beside pgbench...`,
      );
      const alone = await joinLeaveAlone(a.httpPort, joinerTokens[0] as string, seed.joinParties, seconds);
      const cycles = await compare(
        `${backend}, join and leave`,
        joinLeaveCycles(a, joinerTokens, seed.joinParties),
        await pgbench(joinLeaveScript(prefix, seed), LOCK_PREFIX),
        schedule,
      );

      progress(`${backend}: party.updated to the members' sockets, one instance...`);
      const fanout = [await measureFanout(a.httpPort, [wsUrl(a)], seed.fanout, tokenOf, seconds)];
      if (backend === 'postgres') {
        progress('postgres: starting atrium B; party.updated across two instances...');
        const b = await startAtrium(env);
        try {
          fanout.push(await measureFanout(a.httpPort, [wsUrl(a), wsUrl(b)], seed.fanout, tokenOf, seconds));
        } finally {
          await stopAtrium(b);
        }
      }
      if (backend !== 'postgres') return { database, pgbenchClients: clients, alone, cycles, fanout };
      progress(`postgres: party placements of 8 on a game server beside plain joins, for ${seconds} s...`);
      const token = (user: string) => tokenOf.get(user) as string;
      const placement = await measurePlacement(
        a.httpPort,
        placed.parties.map((party) => ({ leader: token(party.leader), members: party.members.map(token) })),
        placed.plainJoiners.map(token),
        seconds,
      );
      return { database, pgbenchClients: clients, alone, cycles, fanout, placement };
    } finally {
      await issuer?.close();
      if (a) await stopAtrium(a);
    }
  });
}
