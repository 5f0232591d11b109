import { WARM_UP_SECONDS } from '../chat/latency.js';
import { Api, type Latency, latency } from '../worlds/harness.js';

/**
 * Measurement 3: a party's placement on one game server (`POST /api/worlds/{world_id}/join
 * {party: true}` by the leader of a party of 8, all online) beside a plain join (`{}`), one
 * request at a time from one client, the two interleaved in one loop so that both meet the same
 * load. Two public worlds with one ready server each (local processes of the fake game server
 * the tests use); each party, and each plain joiner, goes to the other world than its last time,
 * so a placement moves its 8 reservations and a plain join its one, never keeping a place.
 */

export interface PlacementResults {
  party: Latency;
  plain: Latency;
  /** Answers other than 200, of both kinds. */
  errors: number;
}

/** Members' presence lasts PRESENCE_TTL_SECONDS (60): renewed well within it. */
const HEARTBEAT_EVERY_MS = 20_000;

export async function measurePlacement(
  httpPort: number,
  parties: { leader: string; members: string[] }[],
  plainJoiners: readonly string[],
  seconds: number,
): Promise<PlacementResults> {
  const base = `http://127.0.0.1:${httpPort}`;
  const owner = new Api(base);
  await owner.register(`bench_placement_${Date.now()}`);
  const worlds: string[] = [];
  for (const name of ['placement a', 'placement b']) {
    const { id } = await owner.ok<{ id: string }>('POST', '/api/worlds', { name, visibility: 'public' });
    // The owner's join starts the world's server and answers once it is ready.
    await owner.ok('POST', `/api/worlds/${id}/join`);
    worlds.push(id);
  }
  const as = (token: string) => Object.assign(new Api(base), { token });
  const members = parties.flatMap((party) => party.members).map(as);
  const heartbeat = () => Promise.all(members.map((api) => api.ok('POST', '/api/presence/heartbeat')));
  const join = async (token: string, worldId: string, body: object): Promise<number | undefined> => {
    const started = performance.now();
    const reply = await as(token).call('POST', `/api/worlds/${worldId}/join`, body);
    return reply.status === 200 ? performance.now() - started : undefined;
  };

  const party: number[] = [];
  const plain: number[] = [];
  let errors = 0;
  let beaten = 0;
  const warmUpEnds = performance.now() + WARM_UP_SECONDS * 1000;
  const ends = warmUpEnds + seconds * 1000;
  for (let k = 0; performance.now() < ends; k++) {
    if (performance.now() - beaten >= HEARTBEAT_EVERY_MS) {
      await heartbeat();
      beaten = performance.now();
    }
    const leader = parties[k % parties.length] as { leader: string };
    const placed = await join(leader.leader, worlds[Math.floor(k / parties.length) % 2] as string, {
      party: true,
    });
    const joiner = plainJoiners[k % plainJoiners.length] as string;
    const joined = await join(joiner, worlds[Math.floor(k / plainJoiners.length) % 2] as string, {});
    errors += (placed === undefined ? 1 : 0) + (joined === undefined ? 1 : 0);
    if (performance.now() < warmUpEnds) continue;
    if (placed !== undefined) party.push(placed);
    if (joined !== undefined) plain.push(joined);
  }
  return { party: latency(party), plain: latency(plain), errors };
}
