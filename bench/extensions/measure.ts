import { cp } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Backend } from '../backends.js';
import { BODY, type User } from '../chat/latency.js';
import { CHAT_ENV } from '../chat/measure.js';
import { peerRequests } from '../chat/throughput.js';
import { seedUsers } from '../datapath/seed.js';
import {
  type FrameWindow,
  frameClients,
  HEARTBEATS,
  IN_FLIGHT,
  LOAD_CONNECTIONS,
} from '../realtime/frame-load.js';
import { progress } from '../realtime/progress.js';
import type { RestWindow } from '../realtime/rest-load.js';
import { type ContenderRounds, interleavedRounds, type RoundSchedule } from '../realtime/rounds.js';
import { type Atrium, startAtrium, stopAtrium } from '../realtime/servers.js';
import { tokenIssuer } from '../realtime/tokens.js';
import { withBackend } from '../worlds/measure.js';

/**
 * One backend's measurements, each service in its own process on the same seeded data: without
 * extensions, with an extension that hooks other operations (and serves the echo rpc), with a
 * no-op before hook on each measured operation, and (--base) the earlier commit's service.
 */

export const USERS = 200;
const ECHO_INPUT = { hello: 'world', n: 1 };

export interface Variant {
  name: string;
  /** EXTENSIONS, relative to the checkout. */
  extensions?: string;
  /** Another checkout to run the service from. */
  cwd?: string;
}

export const NO_EXTENSION: Variant = { name: 'no extension' };
export const ELSEWHERE: Variant = {
  name: 'hooks on other operations',
  extensions: 'bench/extensions/other-operations.mjs',
};
export const NOOP_BEFORE: Variant = {
  name: 'one no-op before hook',
  extensions: 'bench/extensions/noop-before.mjs',
};

export interface ExtensionsResults {
  variants: Variant[];
  /** Per variant, in `variants` order; the echo rpc over REST last (on ELSEWHERE's service). */
  reads: ContenderRounds<RestWindow>[];
  sends: ContenderRounds<RestWindow>[];
  /** Ping frames, rpc frames and heartbeat frames, on ELSEWHERE's service. */
  frames: ContenderRounds<FrameWindow>[];
}

/** The services' environment: PGlite files belong to one process, so each embedded one gets a copy. */
async function envOf(backend: Backend, env: Record<string, string>, index: number, variant: Variant) {
  const own = {
    ...env,
    ...CHAT_ENV,
    ...(variant.extensions ? { EXTENSIONS: resolve(variant.extensions) } : {}),
  };
  if (backend === 'postgres') return own;
  const copy = join(env.DATA_DIR as string, `service-${index}`);
  for (const entry of ['pgdata', 'keys'])
    await cp(join(env.DATA_DIR as string, entry), join(copy, entry), { recursive: true });
  return { ...own, DATA_DIR: copy };
}

export function measureExtensions(
  backend: Backend,
  schedule: RoundSchedule,
  base: { dir: string; commit: string } | undefined,
  nodeArgs?: readonly string[],
): Promise<ExtensionsResults> {
  const before = base && { name: `commit ${base.commit}`, cwd: base.dir };
  const variants = [NO_EXTENSION, ELSEWHERE, NOOP_BEFORE, ...(before ? [before] : [])];
  return withBackend(backend, async (env, dataDir) => {
    const ids = await seedUsers(env, USERS);
    const issuer = await tokenIssuer(dataDir);
    const tokens = await issuer.issueFor(ids);
    await issuer.close();
    const users: User[] = ids.map((id, i) => ({ id, token: tokens[i] as string }));
    const services: Atrium[] = [];
    try {
      for (const [index, variant] of variants.entries()) {
        progress(`${backend}: starting atrium, ${variant.name}...`);
        services.push(await startAtrium(await envOf(backend, env, index, variant), nodeArgs, variant.cwd));
      }
      const elsewhere = services[variants.indexOf(ELSEWHERE)] as Atrium;
      const asRandomUser = (name: string, service: Atrium, path: string, body?: string) =>
        peerRequests(name, service, users, () => path, body === undefined ? { method: 'GET' } : { body });

      progress(`${backend}: GET /api/users/me on each service, the echo rpc over REST beside them...`);
      const reads = await interleavedRounds(
        `${backend}, GET me`,
        [
          ...services.map((service, i) =>
            asRandomUser((variants[i] as Variant).name, service, '/api/users/me'),
          ),
          asRandomUser('echo rpc', elsewhere, '/api/rpc/echo', JSON.stringify(ECHO_INPUT)),
        ],
        schedule,
      );

      progress(`${backend}: POST /api/chat/dm/{user_id}/messages on each service...`);
      const sends = await interleavedRounds(
        `${backend}, dm.send`,
        services.map((service, i) =>
          peerRequests(
            (variants[i] as Variant).name,
            service,
            users,
            (peer) => `/api/chat/dm/${peer}/messages`,
            {
              body: JSON.stringify({ body: BODY }),
            },
          ),
        ),
        schedule,
      );

      progress(`${backend}: ping, rpc and heartbeat frames, ${LOAD_CONNECTIONS} sockets x ${IN_FLIGHT}...`);
      const url = `ws://127.0.0.1:${elsewhere.wsPort}/ws`;
      const sockets = tokens.slice(0, LOAD_CONNECTIONS);
      const clients = [
        await frameClients('ping', url, sockets, elsewhere.pid, {
          frame: (id) => ({ t: 'ping', id }),
          inFlight: IN_FLIGHT,
        }),
        await frameClients('rpc echo', url, sockets, elsewhere.pid, {
          frame: (id) => ({ t: 'rpc', id, d: { name: 'echo', input: ECHO_INPUT } }),
          inFlight: IN_FLIGHT,
        }),
        // Not a target: an acked frame of the catalogue (one KV write), to tell the frame path's cost from the rpc's.
        await frameClients('presence.heartbeat', url, sockets, elsewhere.pid, HEARTBEATS),
      ];
      try {
        const frames = await interleavedRounds(`${backend}, frames`, clients, schedule);
        return { variants, reads, sends, frames };
      } finally {
        await Promise.all(clients.map((c) => c.close()));
      }
    } finally {
      await Promise.all(services.map(stopAtrium));
    }
  });
}
