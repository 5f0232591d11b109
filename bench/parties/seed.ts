import { PARTY_SIZE_DEFAULT } from '../../protocol/parties.js';
import { configFrom } from '../../src/config.js';
import { insertMember, insertParty } from '../../src/modules/parties/parties.repository.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import { pgbenchUuid, userIdOf } from '../chat/ceiling.js';
import { seedUsers } from '../datapath/seed.js';
import { REST_CONNECTIONS } from '../realtime/rest-load.js';

/**
 * The parties benchmark's database, written before the service starts: users numbered from 1
 * (bench/datapath/seed.ts, ids as bench/chat/ceiling.ts spells them, so pgbench derives them from
 * numbers), then open parties of `max_size` 8 written in one transaction through the parties
 * repository itself (insertParty, insertMember): JOIN_PARTIES for the service's joins and as many
 * for the ceiling's, each of SEATED members; FANOUT_PARTIES of 7 for the fan-out, each with a
 * mover of its own who is in no party yet; PLACEMENT_PARTIES of 8 for the placements on a game
 * server, and PLAIN_JOINERS in no party for the plain joins beside them. Party n's id is user n's with 0001 in its second
 * group, so pgbench derives it from a number too.
 */

/** Joiners of the service (one cycle at a time each), and open parties for each side's joins. */
export const JOINERS = 500;
export const JOIN_PARTIES = 500;
/** Members of each join party: a join makes them one more, with room left (max_size 8). */
export const SEATED = 4;
export const FANOUT_PARTIES = 20;
/** Parties of 8 a leader places on one game server (measurement 3), and plain joiners beside them. */
export const PLACEMENT_PARTIES = 10;
export const PLAIN_JOINERS = 10;

export const partyIdOf = (prefix: string) => (n: number) =>
  userIdOf(prefix)(n).replace('-0000-7000-', '-0001-7000-');
export const pgbenchPartyUuid = (prefix: string, variable: string) =>
  pgbenchUuid(prefix, variable).replace("-0000-7000-8000-'", "-0001-7000-8000-'");

export interface FanoutParty {
  id: string;
  /** Seven members, the first its leader. */
  seated: string[];
  /** The eighth, who joins and leaves. */
  mover: string;
}

export interface PartiesSeed {
  /** The service's joiners, users 1 … JOINERS. */
  joiners: string[];
  /** The ceiling's client c is user ceilingJoiner + c. */
  ceilingJoiner: number;
  /** Parties 1 … JOIN_PARTIES, the service's. */
  joinParties: string[];
  /** The ceiling's parties follow: party ceilingParty + k. */
  ceilingParty: number;
  fanout: FanoutParty[];
  /** Parties of 8 (a leader and 7 members), and users in no party, for measurement 3. */
  placement: { parties: { leader: string; members: string[] }[]; plainJoiners: string[] };
}

export async function seedParties(env: Record<string, string>, prefix: string): Promise<PartiesSeed> {
  const userId = userIdOf(prefix);
  const partyId = partyIdOf(prefix);
  const ceilingJoiner = JOINERS + 1;
  let nextUser = ceilingJoiner + REST_CONNECTIONS;
  const users = (count: number) => Array.from({ length: count }, () => userId(nextUser++));
  const parties = Array.from({ length: 2 * JOIN_PARTIES }, (_, k) => ({
    id: partyId(k + 1),
    members: users(SEATED),
  }));
  const fanout = Array.from({ length: FANOUT_PARTIES }, (_, k) => ({
    id: partyId(2 * JOIN_PARTIES + k + 1),
    seated: users(PARTY_SIZE_DEFAULT - 1),
    mover: userId(nextUser++),
  }));
  const placement = Array.from({ length: PLACEMENT_PARTIES }, (_, k) => ({
    id: partyId(2 * JOIN_PARTIES + FANOUT_PARTIES + k + 1),
    members: users(PARTY_SIZE_DEFAULT),
  }));
  const plainJoiners = users(PLAIN_JOINERS);
  await seedUsers(env, nextUser - 1, userId);
  const config = configFrom(env);
  const db = await openDatabase(config);
  try {
    await transaction(db.data, async (tx) => {
      const at = new Date();
      const seated = fanout.map((p) => ({ id: p.id, members: p.seated }));
      for (const { id, members } of [...parties, ...seated, ...placement]) {
        const [leaderId, ...others] = members as [string, ...string[]];
        await insertParty(tx, { id, leaderId, open: true, maxSize: PARTY_SIZE_DEFAULT, at });
        for (const member of others) await insertMember(tx, id, member, at);
      }
    });
    await executeBound(db.data, 'analyze', []);
  } finally {
    await db.close();
  }
  return {
    joiners: Array.from({ length: JOINERS }, (_, i) => userId(i + 1)),
    ceilingJoiner,
    joinParties: parties.slice(0, JOIN_PARTIES).map((p) => p.id),
    ceilingParty: JOIN_PARTIES + 1,
    fanout,
    placement: {
      parties: placement.map(({ members: [leader, ...others] }) => ({
        leader: leader as string,
        members: others,
      })),
      plainJoiners,
    },
  };
}
