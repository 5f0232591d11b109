import {
  type FrameClients,
  type FrameWindow,
  frameClients,
  IN_FLIGHT,
  LOAD_CONNECTIONS,
} from './frame-load.js';
import { progress } from './progress.js';
import { checkRestHeartbeat, REST_CONNECTIONS, type RestWindow, restContender } from './rest-load.js';
import { type ContenderRounds, interleavedRounds, type RoundSchedule } from './rounds.js';
import { type BareServer, startBareServer } from './servers.js';

/**
 * One atrium instance's heartbeat throughput beside its bare peers, in the same interleaved rounds:
 * frames/s beside the bare uWS msgpack echo, then REST req/s beside bare Fastify.
 */

export interface AtriumUnderLoad {
  name: string;
  pid: number;
  wsPort: number;
  httpPort: number;
  /** LOAD_CONNECTIONS tokens for the frame load; the echo is given the same ones and ignores them. */
  loadTokens: string[];
  /** Every REST request carries this one. */
  restToken: string;
}

export interface Comparison {
  frames: { atrium: ContenderRounds<FrameWindow>; echo: ContenderRounds<FrameWindow> };
  /**
   * `fastify` gets the very request atrium gets, bearer token included (it ignores the header): the
   * reference of the target. `fastifyHeaderless` gets it without the Authorization header.
   */
  rest: {
    atrium: ContenderRounds<RestWindow>;
    fastify: ContenderRounds<RestWindow>;
    fastifyHeaderless: ContenderRounds<RestWindow>;
  };
  /** atrium's answer to one REST heartbeat, checked to be a 200 before the load. */
  restBody: string;
}

/**
 * Starts bench/bare-uws.ts and bench/bare-fastify.ts for the rounds and stops them afterwards; the
 * caller must have finished its idle-memory readings, which the bare servers would disturb.
 */
export async function compareWithBarePeers(
  label: string,
  atrium: AtriumUnderLoad,
  schedule: RoundSchedule,
): Promise<Comparison> {
  const restBody = await checkRestHeartbeat(atrium.httpPort, atrium.restToken);
  progress(`${label}: starting bench/bare-uws.ts and bench/bare-fastify.ts for the throughput rounds...`);
  const peers: BareServer[] = [];
  try {
    const uws = await startBareServer('bench/bare-uws.ts');
    peers.push(uws);
    const fastify = await startBareServer('bench/bare-fastify.ts');
    peers.push(fastify);
    const timing = `${schedule.rounds} rounds of ${schedule.windowSeconds} s windows`;

    progress(
      `${label}: presence.heartbeat frames, ${LOAD_CONNECTIONS} connections x ${IN_FLIGHT} in flight, ${timing}...`,
    );
    const clients: FrameClients[] = [];
    let frames: ContenderRounds<FrameWindow>[];
    try {
      clients.push(
        await frameClients(atrium.name, `ws://127.0.0.1:${atrium.wsPort}/ws`, atrium.loadTokens, atrium.pid),
      );
      clients.push(
        await frameClients('bare uWS echo', `ws://127.0.0.1:${uws.port}/ws`, atrium.loadTokens, uws.pid),
      );
      frames = await interleavedRounds(`${label}, frames`, clients, schedule);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }

    progress(`${label}: POST heartbeats, ${REST_CONNECTIONS} connections, ${timing}...`);
    const authorization = { authorization: `Bearer ${atrium.restToken}` };
    const rest = await interleavedRounds(
      `${label}, REST`,
      [
        restContender(
          atrium.name,
          `http://127.0.0.1:${atrium.httpPort}/api/presence/heartbeat`,
          atrium.pid,
          authorization,
        ),
        restContender(
          'bare Fastify',
          `http://127.0.0.1:${fastify.port}/heartbeat`,
          fastify.pid,
          authorization,
        ),
        restContender('bare Fastify, no token', `http://127.0.0.1:${fastify.port}/heartbeat`, fastify.pid),
      ],
      schedule,
    );
    return {
      frames: {
        atrium: frames[0] as ContenderRounds<FrameWindow>,
        echo: frames[1] as ContenderRounds<FrameWindow>,
      },
      rest: {
        atrium: rest[0] as ContenderRounds<RestWindow>,
        fastify: rest[1] as ContenderRounds<RestWindow>,
        fastifyHeaderless: rest[2] as ContenderRounds<RestWindow>,
      },
      restBody,
    };
  } finally {
    await Promise.all(peers.map((peer) => peer.stop()));
  }
}
