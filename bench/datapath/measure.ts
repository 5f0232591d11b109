import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '../backends.js';
import { type FrameClients, type FrameWindow, frameClients } from '../realtime/frame-load.js';
import { withSharedBackends } from '../realtime/phases.js';
import { progress } from '../realtime/progress.js';
import { type RestWindow, restContender } from '../realtime/rest-load.js';
import { type ContenderRounds, interleavedRounds, type RoundSchedule } from '../realtime/rounds.js';
import { type BareServer, startAtrium, startBareServer, stopAtrium } from '../realtime/servers.js';
import { tokenIssuer } from '../realtime/tokens.js';
import { type PgbenchWindow, pgbenchContender } from './pgbench.js';
import { seedUsers } from './seed.js';

/** One backend's three comparisons: each operation of atrium in interleaved rounds with its ceiling. */

/** Sockets of the status load, one user each, one frame in flight each (the issue's figure). */
export const STATUS_SOCKETS = 200;
/** The service's pool (DATABASE_POOL_SIZE's default with Postgres), given to every ceiling too. */
export const POOL_SIZE = 10;

/** A loadout document of about 1 KiB, as a client would save it. */
export const LOADOUT_BODY = JSON.stringify({
  base_body: 'body.female.03',
  slots: Object.fromEntries(
    ['head', 'hair', 'torso', 'legs', 'feet', 'hands', 'back', 'face'].map((slot, i) => [
      slot,
      { asset_id: `asset.${slot}.${1000 + i}`, tint: '#a1b2c3', scale: 1.05, variant: i },
    ]),
  ),
  emotes: Array.from({ length: 8 }, (_, i) => `emote.dance.${i}`),
  notes: 'x'.repeat(200),
});

const randomIndex = (length: number) => Math.floor(Math.random() * length);

export const UPSERT_LOADOUT = `insert into avatar_loadouts (user_id, document, updated_at) values (:uid, :doc::jsonb, now())
 on conflict (user_id) do update set document = excluded.document, updated_at = excluded.updated_at
 returning document`;

export interface BackendResults {
  me: { atrium: ContenderRounds<RestWindow>; ceiling: ContenderRounds<RestWindow> };
  status: { atrium: ContenderRounds<FrameWindow>; ceiling: ContenderRounds<FrameWindow> };
  loadout: { atrium: ContenderRounds<RestWindow>; ceiling: ContenderRounds<PgbenchWindow> };
  poolSize: number;
}

/** Runs `use` with a seeded database of the backend and the environment of atrium on it. */
async function withSeededBackend<T>(
  backend: Backend,
  use: (env: Record<string, string>, dataDir: string, userIds: string[]) => Promise<T>,
): Promise<T> {
  const seeded = async (env: Record<string, string>, dataDir: string) =>
    use(env, dataDir, await seedUsers(env, STATUS_SOCKETS));
  if (backend === 'postgres') return withSharedBackends('postgres', seeded);
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-datapath-'));
  try {
    return await seeded({ DATA_DIR: dataDir }, dataDir);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * The ceilings' database: the same Postgres database and pool size, or for the embedded backend a
 * copy of the seeded PGlite directory per ceiling server (PGlite files belong to one process).
 */
async function ceilingEnv(
  backend: Backend,
  env: Record<string, string>,
  dataDir: string,
  name: string,
): Promise<Record<string, string>> {
  if (backend === 'postgres')
    return { DATABASE_URL: env.DATABASE_URL as string, BARE_POOL_SIZE: String(POOL_SIZE) };
  const copy = join(dataDir, `ceiling-${name}`);
  await cp(join(dataDir, 'pgdata'), copy, { recursive: true });
  return { BARE_PGLITE_DIR: copy };
}

export function measureBackend(
  backend: Backend,
  schedule: RoundSchedule,
  nodeArgs?: readonly string[],
): Promise<BackendResults> {
  return withSeededBackend(backend, async (env, dataDir, userIds) => {
    const peers: BareServer[] = [];
    const clients: FrameClients[] = [];
    const atrium = await startAtrium({ ...env, DATABASE_POOL_SIZE: String(POOL_SIZE) }, nodeArgs);
    const issuer = await tokenIssuer(dataDir);
    try {
      const start = async (script: string, name: string) => {
        const server = await startBareServer(script, await ceilingEnv(backend, env, dataDir, name));
        peers.push(server);
        return server;
      };
      const fastify = await start('bench/bare-fastify-pg.ts', 'fastify');
      const uws = await start('bench/bare-uws-pg.ts', 'uws');
      const tokens = await issuer.issueFor(userIds);
      const authorization = { authorization: `Bearer ${tokens[0]}` };
      const api = (path: string) => `http://127.0.0.1:${atrium.httpPort}${path}`;

      progress(`${backend}: GET /api/users/me beside bare Fastify + the same SELECT...`);
      const me = await interleavedRounds(
        `${backend}, GET me`,
        [
          // Each request as a random seeded user, as the ceiling reads a random one.
          restContender(
            'atrium',
            api('/api/users/me'),
            atrium.pid,
            {},
            {
              method: 'GET',
              setup: (request) => ({
                ...request,
                headers: {
                  ...request.headers,
                  authorization: `Bearer ${tokens[randomIndex(tokens.length)]}`,
                },
              }),
            },
          ),
          restContender(
            'bare Fastify',
            `http://127.0.0.1:${fastify.port}/me`,
            fastify.pid,
            {},
            { method: 'GET' },
          ),
        ],
        schedule,
      );

      progress(
        `${backend}: presence.status frames, ${STATUS_SOCKETS} sockets x 1, beside bare uWS + the same UPDATE...`,
      );
      const load = {
        frame: (id: number, socket: number) => ({
          t: 'presence.status',
          id,
          d: { status_message: `at ${socket}.${id}` },
        }),
        inFlight: 1,
      };
      clients.push(
        await frameClients('atrium', `ws://127.0.0.1:${atrium.wsPort}/ws`, tokens, atrium.pid, load),
      );
      clients.push(await frameClients('bare uWS', `ws://127.0.0.1:${uws.port}/ws`, tokens, uws.pid, load));
      const status = await interleavedRounds(`${backend}, status frames`, clients, schedule);
      await Promise.all(clients.splice(0).map((c) => c.close()));

      progress(`${backend}: PUT /api/avatar/loadout beside pgbench with the same upsert...`);
      const pgbenchServer =
        backend === 'embedded' ? await start('bench/bare-pglite-socket.ts', 'pgbench') : undefined;
      const url = new URL(env.DATABASE_URL ?? 'postgres://postgres@localhost:5432/postgres');
      const pgbench = await pgbenchContender(
        `pgbench -c ${backend === 'embedded' ? 1 : POOL_SIZE}`,
        {
          host: (pgbenchServer?.announced.host as string) ?? url.hostname,
          port: Number(url.port || 5432),
          user: url.username,
          database: url.pathname.slice(1),
        },
        UPSERT_LOADOUT,
        { uid: userIds[0] as string, doc: LOADOUT_BODY },
        backend === 'embedded' ? 1 : POOL_SIZE,
        pgbenchServer?.pid,
      );
      try {
        const loadout = await interleavedRounds<RestWindow | PgbenchWindow>(
          `${backend}, PUT loadout`,
          [
            restContender('atrium', api('/api/avatar/loadout'), atrium.pid, authorization, {
              method: 'PUT',
              body: LOADOUT_BODY,
            }),
            pgbench,
          ],
          schedule,
        );
        return {
          me: { atrium: me[0], ceiling: me[1] },
          status: { atrium: status[0], ceiling: status[1] },
          loadout: { atrium: loadout[0], ceiling: loadout[1] },
          poolSize: backend === 'embedded' ? 1 : POOL_SIZE,
        } as unknown as BackendResults;
      } finally {
        await pgbench.close();
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await Promise.all(peers.map((p) => p.stop()));
      await stopAtrium(atrium);
      await issuer.close();
    }
  });
}
