import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { configFrom } from '../../src/config.js';
import { openDatabase } from '../../src/platform/db.js';
import { clusterTarball, prepareClusterDir } from '../../src/platform/embedded-cluster.js';
import { migrateUp } from '../../src/platform/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Embedded mode: path of a PGlite dump of a freshly migrated database. */
    embeddedTemplatePath: string;
    /** Embedded mode: path of a PGlite dump of a database before any migration. */
    embeddedEmptyPath: string;
    /**
     * Embedded mode: a DATA_DIR holding a migrated embedded database (`pgdata/`), which tests that
     * spawn the service or the CLI copy instead of paying initdb in every child process.
     */
    embeddedDataDirSeed: string;
    /** Postgres mode: name of a migrated template database every test file clones. */
    postgresTemplateDb: string;
  }
}

/**
 * Migrates one database per test run and lets every test file clone it, so no file pays for
 * initdb and migrations again: a PGlite dump in embedded mode, a template database on Postgres.
 */
export default async function setup(project: TestProject) {
  const removeRunTemp = await useRunTempDir();
  const databaseUrl = process.env.DATABASE_URL;
  if (databaseUrl) {
    const templateDb = `atrium_tpl_${randomBytes(4).toString('hex')}`;
    await adminQuery(databaseUrl, `create database ${templateDb}`);
    const templateUrl = withDatabase(databaseUrl, templateDb);
    const db = await openDatabase(configFrom({ DATABASE_URL: templateUrl }));
    await migrateUp(db, templateUrl);
    await db.close();
    project.provide('postgresTemplateDb', templateDb);
    project.provide('embeddedTemplatePath', '');
    project.provide('embeddedEmptyPath', '');
    project.provide('embeddedDataDirSeed', '');
    return async () => {
      await adminQuery(databaseUrl, `drop database if exists ${templateDb} with (force)`);
      await removeRunTemp();
    };
  }
  const dir = await mkdtemp(join(tmpdir(), 'atrium-test-'));
  // initdb and the migrations cost seconds: the cluster cache beside PGlite
  // (src/platform/embedded-cluster.ts) keeps both results across runs, made again when the
  // migrations change. The migration tests' empty databases start from the empty one.
  const emptyPath = join(dir, 'empty.tar');
  await writeFile(emptyPath, await clusterTarball({ stage: 'empty' }));
  project.provide('embeddedEmptyPath', emptyPath);
  const templatePath = join(dir, 'template.tar');
  await writeFile(templatePath, await clusterTarball({ stage: 'migrated' }));
  project.provide('embeddedTemplatePath', templatePath);
  // What a service's first start on an empty DATA_DIR unpacks, as it unpacks it.
  const seed = join(dir, 'data-dir-seed');
  await prepareClusterDir(join(seed, 'pgdata'), { stage: 'migrated' });
  project.provide('embeddedDataDirSeed', seed);
  project.provide('postgresTemplateDb', '');
  return async () => {
    await rm(dir, { recursive: true, force: true });
    await removeRunTemp();
  };
}

/**
 * Points TMPDIR at a directory of this run's own, before the test workers start (they inherit it,
 * and so do the processes they start), and answers how to remove it: the temp dirs the tests, the
 * service's embedded database sockets and the game-server fixtures make go with the run, even
 * those of processes a test killed, instead of piling up in the machine's /tmp. Short, for the
 * unix sockets made under it (about 107 bytes at most).
 */
async function useRunTempDir(): Promise<() => Promise<void>> {
  const runTemp = await mkdtemp(join(tmpdir(), 'atrium-run-'));
  // Others may pass through it, not list it, as through /tmp: a test's private PostgreSQL server
  // runs as the postgres account in a directory of its own made here (test/helpers/postgres-server.ts).
  await chmod(runTemp, 0o711);
  process.env.TMPDIR = runTemp;
  return () => rm(runTemp, { recursive: true, force: true });
}

export function withDatabase(databaseUrl: string, name: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one statement on the server's own database (CREATE/DROP DATABASE cannot run in a transaction). */
export async function adminQuery(databaseUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
