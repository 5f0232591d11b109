import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type MigrationObject, MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import type { ConnectionTarget } from './db-pool.js';

/**
 * MikroORM as the migrations use it, and only they: migrate.ts imports this file when something is
 * to be migrated (or a command asks for the migrations' state) and closes the ORM once done. The
 * service's statements never go through it: they run on the pool of db-pool.ts, so a process whose
 * database is up to date loads neither MikroORM nor knex.
 */

export interface MigrationOrmOptions {
  /** Where the names of the applied migrations are recorded. */
  tableName: string;
  migrationsList: MigrationObject[];
  /** The bound on opening the connection (the database's own). */
  connectMs: number;
}

/**
 * MikroORM with its Migrator on `target`, on one connection: a connection of its own, with no
 * bound on a statement (building an index on a large table may rightly take minutes, and a
 * migration cut off at the service's query bound would stop every start), or `lent`, which it
 * leaves open. The embedded database lends its pool's only connection: its socket serves one at a
 * time, and a connection of the ORM's own would be refused while the pool holds one (or has just
 * closed it, as the socket server lets a session go a few ticks after it closed).
 */
export async function openMigrationOrm(
  target: ConnectionTarget,
  { tableName, migrationsList, connectMs }: MigrationOrmOptions,
  lent?: pg.Client,
): Promise<MikroORM> {
  const orm = await MikroORM.init(
    defineConfig({
      ...('connectionString' in target
        ? { clientUrl: target.connectionString }
        : { host: target.host, port: target.port, user: target.user, dbName: target.database }),
      // Connected on first use, so a lent connection is in place before any.
      connect: false,
      pool: { min: 0, max: 1 },
      driverOptions: { connection: { connectionTimeoutMillis: connectMs } },
      extensions: [Migrator],
      migrations: {
        tableName,
        migrationsList,
        transactional: true,
        // All pending migrations apply in one transaction, so a failure leaves the schema as it was.
        allOrNothing: true,
        snapshot: false,
        silent: true,
      },
      // No entities: the migrations are SQL.
      discovery: { warnWhenNoEntities: false },
      allowGlobalContext: false,
      forceUtcTimezone: true,
      ensureDatabase: false,
      debug: false,
    }),
  );
  if (lent) {
    // knex's postgres client opens each pooled connection in _acquireOnlyConnection and ends it in
    // destroyRawConnection (knex 3): its pool of one takes the lent connection and leaves it open.
    const { client } = orm.em.getConnection().getKnex() as unknown as { client: KnexPgClient };
    client._acquireOnlyConnection = async () => lent;
    client.destroyRawConnection = async () => {};
  }
  return orm;
}

interface KnexPgClient {
  _acquireOnlyConnection(): Promise<pg.Client>;
  destroyRawConnection(connection: pg.Client): Promise<void>;
}
