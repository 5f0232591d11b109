import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '../backends.js';
import { withSharedBackends } from '../realtime/phases.js';
import { type Atrium, startAtrium, stopAtrium } from '../realtime/servers.js';
import { type BatchResults, measureBatchWrites } from './batch-write.js';
import { type BulkResults, measureBulkLoad, seedBulkWorld } from './bulk-load.js';
import { type CoEditResults, measureCoEditing } from './co-editing.js';
import { Api, pgliteSql, postgresSql, progress, type Sql, WORLDS_ENV } from './harness.js';
import {
  explainPages,
  type HistoryResults,
  type HistorySeed,
  measureHistory,
  seedHistory,
} from './history.js';
import { measurePuts, type PutResults } from './put-throughput.js';

/** One backend's five measurements, on one service instance (two for co-editing on Postgres). */

export const BULK_REPS = 7;
export const BATCHES = 50;
const ROOMS = 10;
/** Seeding 1,000,000 revisions goes ahead only if projected to finish within this. */
const HISTORY_BUDGET_SECONDS = 120;

export interface WorldsResults {
  database: string;
  bulk: BulkResults;
  batch: BatchResults;
  putsRooms: PutResults;
  putsWorlds: PutResults;
  coEditCross?: CoEditResults;
  coEditSame: CoEditResults;
  historySeed: HistorySeed;
  history: HistoryResults;
  /** Postgres: how the page statement ran for the newest page and a deep one. */
  plans?: { newest: string; deep: string };
}

/** The backend's environment and DATA_DIR: a fresh Postgres database with Redis, or a fresh embedded one. */
export async function withBackend<T>(
  backend: Backend,
  use: (env: Record<string, string>, dataDir: string) => Promise<T>,
): Promise<T> {
  if (backend === 'postgres') return withSharedBackends('postgres', use);
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-worlds-'));
  try {
    return await use({ DATA_DIR: dataDir }, dataDir);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

export function measureWorlds(backend: Backend, seconds: number): Promise<WorldsResults> {
  return withBackend(backend, async (baseEnv, dataDir) => {
    const env: Record<string, string> = { ...baseEnv, ...WORLDS_ENV };
    const running: Atrium[] = [];
    const start = async () => {
      const service = await startAtrium(env);
      running.push(service);
      return service;
    };
    const sqls: Sql[] = [];
    try {
      let a = await start();
      const api = new Api(`http://127.0.0.1:${a.httpPort}`);
      await api.register('bench_worlds');
      const bulkWorld = await seedBulkWorld(api);
      const historyWorld = await api.world('history');
      const ids = { ...historyWorld, authorId: api.userId };
      let ceiling: Sql;
      let historySeed: HistorySeed;
      if (backend === 'embedded') {
        // PGlite files belong to one process: seed with the service stopped, and give the ceiling a copy.
        progress('embedded: stopping atrium to copy the database for the ceiling and seed the history...');
        await stopAtrium(running.pop() as Atrium);
        const copy = join(dataDir, 'ceiling-pgdata');
        await cp(join(dataDir, 'pgdata'), copy, { recursive: true });
        const seedSql = await pgliteSql(join(dataDir, 'pgdata'));
        try {
          historySeed = await seedHistory(seedSql, ids, HISTORY_BUDGET_SECONDS);
        } finally {
          await seedSql.close();
        }
        a = await start();
        api.base = `http://127.0.0.1:${a.httpPort}`;
        ceiling = await pgliteSql(copy);
      } else {
        ceiling = await postgresSql(env.DATABASE_URL as string);
        historySeed = await seedHistory(ceiling, ids, Number.POSITIVE_INFINITY);
      }
      sqls.push(ceiling);
      const [{ version }] = (await ceiling.query<{ version: string }>('select version()')) as [
        { version: string },
      ];
      const wsA = `ws://127.0.0.1:${a.wsPort}/ws`;

      progress(
        `${backend}: room content, ${BULK_REPS} repetitions of REST, chunks.load and the ceiling SQL...`,
      );
      const bulk = await measureBulkLoad(api, wsA, bulkWorld, ceiling, BULK_REPS);
      progress(`${backend}: ${BATCHES} batch writes of 100 x 16 KiB...`);
      const batch = await measureBatchWrites(api, BATCHES);

      progress(`${backend}: PUT throughput, 50 editors on ${ROOMS} rooms of one world...`);
      const shared = await api.world('put rooms');
      const rooms = [shared];
      for (let r = 1; r < ROOMS; r++)
        rooms.push({ worldId: shared.worldId, roomId: await api.room(shared.worldId, `room ${r}`) });
      const putsRooms = await measurePuts(api, rooms, seconds, a.pid);
      progress(`${backend}: PUT throughput, 50 editors on ${ROOMS} worlds...`);
      const worlds = [];
      for (let w = 0; w < ROOMS; w++) worlds.push(await api.world(`put world ${w}`));
      const putsWorlds = await measurePuts(api, worlds, seconds, a.pid);

      let coEditCross: CoEditResults | undefined;
      if (backend === 'postgres') {
        progress('postgres: starting atrium B on the same database, Redis and DATA_DIR for co-editing...');
        const b = await start();
        coEditCross = await measureCoEditing(api, wsA, `ws://127.0.0.1:${b.wsPort}/ws`, seconds, 'A to B');
        await stopAtrium(running.pop() as Atrium); // B, so it idles through nothing else
      }
      progress(`${backend}: co-editing with editor and subscribers on one instance...`);
      const coEditSame = await measureCoEditing(api, wsA, wsA, seconds, 'same instance');

      progress(
        `${backend}: history pages over ${historySeed.revisions.toLocaleString('en-US')} revisions...`,
      );
      const history = await measureHistory(api, historyWorld.worldId, historySeed.revisions);
      const plans = backend === 'postgres' ? await explainPages(ceiling, historyWorld.worldId) : undefined;
      return {
        database: version.split(' on ')[0] ?? version,
        bulk,
        batch,
        putsRooms,
        putsWorlds,
        ...(coEditCross ? { coEditCross } : {}),
        coEditSame,
        historySeed,
        history,
        ...(plans ? { plans } : {}),
      };
    } finally {
      await Promise.all(sqls.map((sql) => sql.close()));
      await Promise.all(running.map(stopAtrium));
    }
  });
}
