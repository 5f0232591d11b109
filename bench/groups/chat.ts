import { setTimeout as sleep } from 'node:timers/promises';
import type { GroupMessage } from '../../protocol/groups.js';
import { BODY, WARM_UP_SECONDS } from '../chat/latency.js';
import { POOL_SIZE } from '../datapath/measure.js';
import { type CpuUse, cpuWindow, databaseCpuSeconds } from '../realtime/process-stats.js';
import { progress } from '../realtime/progress.js';
import { type Atrium, startAtrium, startBareServer, stopAtrium } from '../realtime/servers.js';
import { authedSocket } from '../realtime/ws-client.js';
import { Frames, type Latency, latency } from '../worlds/harness.js';

/**
 * Measurement 2: ONLINE member sockets of the roster group, alternately on instance A and B, each
 * joined to its chat (`chat.join {group_id}`). SENDERS of them (half on each instance) send
 * `chat.sendToGroup` frames on a fixed schedule at the rate, in turn. The SAMPLED first sockets
 * (SENDERS among them) decode every frame and time each message from its send to its
 * `chat.message` frame there, matched by message id; the others only count the frames they get,
 * since decoding ONLINE x rate frames a second would take this process more than a core.
 */

export const ONLINE = 500;
export const SAMPLED = 100;
export const SENDERS = 50;
/** The rate, then lower ones: where this 2-core machine keeps up, for the path's own latency. */
export const RATES = [500, 250, 100] as const;

export interface GroupChatResults {
  rate: number;
  /** Over the sampled sockets; then those on the sender's instance and those on the other one. */
  latency: Latency;
  sameInstance: Latency;
  otherInstance: Latency;
  ack: Latency;
  /** Sampled arrivals expected (measured messages x sampled sockets) and received. */
  expected: number;
  delivered: number;
  duplicates: number;
  /** Frames the unsampled sockets received, and all messages (warm-up included) x those sockets. */
  unsampledFrames: number;
  unsampledExpected: number;
  sendErrors: Record<string, number>;
  /** Cores used while sending: instance A, instance B, Postgres + Redis, this process, the machine. */
  cores: { a: number; b: number; databases: number; harness: number; machine: number };
}

/** `tokens`: ONLINE members of `groupId`; socket i goes to instances[i % 2]. */
export async function measureGroupChat(
  instances: readonly { url: string; pid: number }[],
  tokens: readonly string[],
  groupId: string,
  seconds: number,
  rate: number,
): Promise<GroupChatResults> {
  const sockets: Frames[] = [];
  /** Per sampled socket: message id -> arrival. */
  const arrivals = Array.from({ length: SAMPLED }, () => new Map<string, number>());
  let duplicates = 0;
  let unsampledFrames = 0;
  try {
    for (let start = 0; start < ONLINE; start += 50) {
      const opened = await Promise.all(
        tokens.slice(start, start + 50).map(async (token, k) => {
          const i = start + k;
          const frames = new Frames(await authedSocket(instances[i % 2]?.url as string, token));
          await frames.request('chat.join', { group_id: groupId });
          if (i < SAMPLED) {
            frames.onEvent = (frame, at) => {
              if (frame.t !== 'chat.message') return;
              const { id } = frame.d as GroupMessage;
              if ((arrivals[i] as Map<string, number>).has(id)) duplicates++;
              else (arrivals[i] as Map<string, number>).set(id, at);
            };
          } else {
            frames.ws.removeAllListeners('message');
            frames.ws.on('message', () => unsampledFrames++);
          }
          return frames;
        }),
      );
      sockets.push(...opened);
    }
    /** By message id: when it was sent and the instance of its sender. */
    const sent = new Map<string, { at: number; instance: number }>();
    const ackMs: number[] = [];
    const sendErrors: Record<string, number> = {};
    const acks: Promise<unknown>[] = [];
    const warmUp = rate * WARM_UP_SECONDS;
    const total = rate * seconds;
    const [cpuA, cpuB] = await Promise.all(instances.map((i) => cpuWindow(i.pid)));
    const databasesBefore = await databaseCpuSeconds();
    const start = performance.now();
    for (let k = 0; k < warmUp + total; k++) {
      const wait = start + (k * 1000) / rate - performance.now();
      if (wait > 0) await sleep(wait);
      const at = performance.now();
      const sender = k % SENDERS;
      const request = (sockets[sender] as Frames).request<GroupMessage>('chat.sendToGroup', {
        group_id: groupId,
        body: BODY,
      });
      acks.push(
        request.then(
          (message) => {
            if (k < warmUp) return;
            ackMs.push(performance.now() - at);
            sent.set(message.id, { at, instance: sender % 2 });
          },
          (error: Error) => {
            const code = error.message.split(':')[0] as string;
            sendErrors[code] = (sendErrors[code] ?? 0) + 1;
          },
        ),
      );
    }
    await Promise.all(acks);
    const [a, b] = await Promise.all([cpuA, cpuB].map((cpu) => (cpu as () => Promise<CpuUse>)()));
    const databases = ((await databaseCpuSeconds()) - databasesBefore) / ((performance.now() - start) / 1000);
    const expected = sent.size * SAMPLED;
    const arrived = () => arrivals.reduce((n, m) => n + [...sent.keys()].filter((id) => m.has(id)).length, 0);
    for (let waited = 0; waited < 5000 && arrived() < expected; waited += 250) await sleep(250);
    const all: number[] = [];
    const same: number[] = [];
    const other: number[] = [];
    arrivals.forEach((byId, i) => {
      for (const [id, { at, instance }] of sent) {
        const arrivedAt = byId.get(id);
        if (arrivedAt === undefined) continue;
        all.push(arrivedAt - at);
        (instance === i % 2 ? same : other).push(arrivedAt - at);
      }
    });
    return {
      rate,
      latency: latency(all),
      sameInstance: latency(same),
      otherInstance: latency(other),
      ack: latency(ackMs),
      expected,
      delivered: all.length,
      duplicates,
      unsampledFrames,
      unsampledExpected: (warmUp + total) * (ONLINE - SAMPLED),
      sendErrors,
      cores: {
        a: a?.serverCores ?? Number.NaN,
        b: b?.serverCores ?? Number.NaN,
        databases,
        harness: a?.clientCores ?? Number.NaN,
        machine: a?.machineCores ?? Number.NaN,
      },
    };
  } finally {
    await Promise.all(sockets.map((s) => s.close()));
  }
}

/** One rate on the two service instances, and on the bare fan-out servers. */
export interface ChatBesideBare {
  service: GroupChatResults;
  ceiling: GroupChatResults;
}

/**
 * Starts instance B beside `a` (same environment) and two bare fan-out servers
 * (bench/groups/bare-fanout.ts) on the same Postgres and Redis, measures each rate on the
 * instances and then on the bare servers, and stops them all but `a`.
 */
export async function measureChatBesideBare(
  a: Atrium,
  env: Record<string, string>,
  tokens: readonly string[],
  groupId: string,
  seconds: number,
): Promise<ChatBesideBare[]> {
  progress(
    'postgres: starting atrium B, and two bare uWS fan-out servers, on the same Postgres and Redis...',
  );
  const b = await startAtrium(env);
  const bareEnv = {
    DATABASE_URL: env.DATABASE_URL as string,
    BARE_POOL_SIZE: String(POOL_SIZE),
    REDIS_URL: env.REDIS_URL as string,
  };
  const bare = [];
  try {
    for (let i = 0; i < 2; i++) bare.push(await startBareServer('bench/groups/bare-fanout.ts', bareEnv));
    const on = (servers: { port: number; pid: number }[], rate: number) =>
      measureGroupChat(
        servers.map((s) => ({ url: `ws://127.0.0.1:${s.port}/ws`, pid: s.pid })),
        tokens,
        groupId,
        seconds,
        rate,
      );
    const results: ChatBesideBare[] = [];
    for (const rate of RATES) {
      progress(
        `postgres: group chat, ${ONLINE} members online on A and B, ${rate} messages/s, then on the bare servers...`,
      );
      const service = await on(
        [a, b].map((s) => ({ port: s.wsPort, pid: s.pid })),
        rate,
      );
      results.push({ service, ceiling: await on(bare, rate) });
    }
    return results;
  } finally {
    await Promise.all(bare.map((s) => s.stop()));
    await stopAtrium(b);
  }
}
