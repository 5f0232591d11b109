import { join } from 'node:path';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type EntityManager, type Knex, MikroORM } from '@mikro-orm/postgresql';
import { migrationsList } from '../../migrations/index.js';
import type { Config } from '../config.js';
import { entities } from '../modules/entities.js';
import { type EmbeddedOptions, type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres.js';

export type Orm = MikroORM;

export interface Database {
  orm: Orm;
  /** `postgres` with DATABASE_URL, `embedded` (PGlite) otherwise. */
  kind: 'postgres' | 'embedded';
  /** Set for the embedded database only. */
  embedded?: EmbeddedPostgres;
  /** Throws when the database does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** Embedded only: start from this PGlite dump instead of DATA_DIR (tests use an in-memory clone). */
  embedded?: EmbeddedOptions;
}

export async function openDatabase(config: Config, options: OpenDatabaseOptions = {}): Promise<Database> {
  if (config.DATABASE_URL) {
    const orm = await MikroORM.init(
      ormOptions({ clientUrl: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE }),
    );
    return wrap(orm, 'postgres');
  }
  const embedded = await startEmbeddedPostgres(
    options.embedded ?? { dataDir: join(config.DATA_DIR, 'pgdata') },
  );
  try {
    const orm = await MikroORM.init(
      ormOptions({ host: embedded.socketDir, port: embedded.port, poolSize: 1, dbName: 'postgres' }),
    );
    return wrap(orm, 'embedded', embedded);
  } catch (error) {
    await embedded.close();
    throw error;
  }
}

function wrap(orm: Orm, kind: Database['kind'], embedded?: EmbeddedPostgres): Database {
  return {
    orm,
    kind,
    ...(embedded ? { embedded } : {}),
    async ping() {
      await orm.em.getConnection().execute('select 1');
    },
    async close() {
      await orm.close(true);
      await embedded?.close();
    },
  };
}

interface ConnectionTarget {
  clientUrl?: string;
  host?: string;
  port?: number;
  dbName?: string;
  poolSize: number;
}

function ormOptions(target: ConnectionTarget) {
  return defineConfig({
    ...(target.clientUrl ? { clientUrl: target.clientUrl } : {}),
    ...(target.host ? { host: target.host, port: target.port, user: 'postgres', dbName: target.dbName } : {}),
    pool: { min: 0, max: target.poolSize },
    entities,
    extensions: [Migrator],
    migrations: {
      tableName: 'atrium_migrations',
      migrationsList,
      transactional: true,
      // All pending migrations apply in one transaction, so a failure leaves the schema as it was.
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
    // Entities are declared with explicit types, so no reflection or source scanning happens at startup.
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    ensureDatabase: false,
    debug: false,
  });
}

/**
 * Runs SQL with `?` placeholders whose values the driver binds as real parameters. MikroORM's
 * `execute` formats every parameter into the SQL text, escaping it character by character: for a
 * batch statement over thousands of ids that was megabytes of garbage per call.
 */
export async function executeBound<Row>(
  em: EntityManager,
  sql: string,
  params: readonly Knex.Value[],
): Promise<Row[]> {
  const result = (await em.getKnex().raw(sql, params)) as { rows: Row[] };
  return result.rows;
}
