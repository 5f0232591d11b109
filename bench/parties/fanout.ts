import { setTimeout as sleep } from 'node:timers/promises';
import type { Party } from '../../protocol/parties.js';
import { WARM_UP_SECONDS } from '../chat/latency.js';
import { authedSocket } from '../realtime/ws-client.js';
import { Frames, type Latency, latency } from '../worlds/harness.js';
import { type PartyChange, partyRequest } from './joins.js';
import type { FanoutParty } from './seed.js';

/**
 * Measurement 2: `party.updated` end to end. In each of FANOUT_PARTIES parties of 7, every member
 * and the party's mover hold a socket, member k's on instance k % instances (the mover's on the
 * first, which serves its REST requests too). Each mover joins, then leaves, then joins … on a
 * fixed schedule of CHANGES_PER_SECOND, the parties' schedules spread evenly over its interval
 * (not all at once, a burst that would measure its own queue); each change is timed from its
 * request to the `party.updated` frame on each of the 7 other members' sockets (its arrival,
 * before decoding), the event told from the next by whether the mover is among its members. A
 * change waits for the last arrival of the one before (or ARRIVAL_TIMEOUT_MS) and the run ends
 * with a leave, so the parties are as seeded for the next run.
 */

export const CHANGES_PER_SECOND = 2;
const ARRIVAL_TIMEOUT_MS = 5000;

export interface FanoutResults {
  instances: number;
  /** Over the other members' sockets; then those on the mover's instance and those on another. */
  latency: Latency;
  sameInstance: Latency;
  otherInstance: Latency;
  /** The mover's own request, to its answer. */
  request: Latency;
  expected: number;
  delivered: number;
  /** Events that came when none was awaited, or twice. */
  strays: number;
  requestErrors: number;
}

interface Awaited {
  joined: boolean;
  at: number;
  /** After the warm-up. */
  measured: boolean;
  seen: Set<number>;
  done: () => void;
}

export async function measureFanout(
  httpPort: number,
  wsUrls: readonly string[],
  parties: readonly FanoutParty[],
  tokenOf: ReadonlyMap<string, string>,
  seconds: number,
): Promise<FanoutResults> {
  const sockets: Frames[] = [];
  const same: number[] = [];
  const other: number[] = [];
  const requestMs: number[] = [];
  let strays = 0;
  let requestErrors = 0;
  let expected = 0;
  const warmUp = 2 * Math.ceil((WARM_UP_SECONDS * CHANGES_PER_SECOND) / 2);
  // An even count, so the last change is a leave.
  const changes = warmUp + 2 * Math.ceil((seconds * CHANGES_PER_SECOND) / 2);
  const open = async (userId: string, k: number) => {
    const frames = new Frames(
      await authedSocket(wsUrls[k % wsUrls.length] as string, tokenOf.get(userId) as string),
    );
    sockets.push(frames);
    return frames;
  };

  const moveParty = async ({ id, seated, mover }: FanoutParty) => {
    let awaited: Awaited | undefined;
    await open(mover, 0);
    await Promise.all(
      seated.map(async (member, index) => {
        const k = index + 1;
        (await open(member, k)).onEvent = (frame, at) => {
          const party = (frame.d as { party?: Party } | undefined)?.party;
          if (frame.t !== 'party.updated' || party?.id !== id) return;
          const joined = party.members.some((m) => m.user_id === mover);
          if (!awaited || awaited.joined !== joined || awaited.seen.has(k)) return void strays++;
          awaited.seen.add(k);
          if (awaited.measured) (k % wsUrls.length === 0 ? same : other).push(at - awaited.at);
          if (awaited.seen.size === seated.length) awaited.done();
        };
      }),
    );
    return async (start: number) => {
      for (let n = 0; n < changes; n++) {
        const wait = start + (n * 1000) / CHANGES_PER_SECOND - performance.now();
        if (wait > 0) await sleep(wait);
        const change: PartyChange = n % 2 === 0 ? 'join' : 'leave';
        const arrived = new Promise<void>((done) => {
          awaited = {
            joined: change === 'join',
            at: performance.now(),
            seen: new Set(),
            done,
            measured: n >= warmUp,
          };
        });
        const at = (awaited as Awaited).at;
        const status = await partyRequest(httpPort, tokenOf.get(mover) as string, id, change);
        if (status >= 300) requestErrors++;
        if (n >= warmUp) {
          requestMs.push(performance.now() - at);
          expected += seated.length;
        }
        await Promise.race([arrived, sleep(ARRIVAL_TIMEOUT_MS)]);
        awaited = undefined;
      }
    };
  };

  try {
    const runs = [];
    for (const party of parties) runs.push(await moveParty(party));
    const start = performance.now();
    const spacing = 1000 / CHANGES_PER_SECOND / runs.length;
    await Promise.all(runs.map((run, i) => run(start + i * spacing)));
    return {
      instances: wsUrls.length,
      latency: latency([...same, ...other]),
      sameInstance: latency(same),
      otherInstance: latency(other),
      request: latency(requestMs),
      expected,
      delivered: same.length + other.length,
      strays,
      requestErrors,
    };
  } finally {
    await Promise.all(sockets.map((s) => s.close()));
  }
}
