import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cpuWindow } from '../realtime/process-stats.js';
import type { Contender, WindowFigures } from '../realtime/rounds.js';

const run = promisify(execFile);

export interface PgbenchWindow extends WindowFigures {
  /** pgbench's average latency per transaction. */
  meanMs: number;
}

/** Where pgbench connects: libpq parameters (a unix socket directory is a `host`). */
export interface PgbenchTarget {
  host: string;
  port: number;
  user: string;
  database: string;
}

/** The pgbench target of a postgres:// URL. */
export function pgbenchTargetOf(databaseUrl: string): PgbenchTarget {
  const url = new URL(databaseUrl);
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    user: url.username,
    database: url.pathname.slice(1),
  };
}

/**
 * pgbench running one SQL statement with `clients` connections, prepared (`-M prepared`, so each
 * `:name` is a bound parameter, as in the service), one run per window. Its server is Postgres'
 * backends or PGlite's process: the CPU columns are those of `serverPid` (the embedded one) or,
 * for Postgres, left out.
 */
export async function pgbenchContender(
  name: string,
  target: PgbenchTarget,
  statement: string,
  variables: Record<string, string>,
  clients: number,
  serverPid?: number,
): Promise<Contender<PgbenchWindow> & { close(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'atrium-pgbench-'));
  const script = join(dir, 'statement.sql');
  // The statement's semicolon; a script that ends with a meta-command (`\endpipeline`) takes none.
  await writeFile(script, /\n\\\w+$/.test(statement) ? `${statement}\n` : `${statement};\n`);
  const args = (seconds: number) => [
    ...['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(clients, 2))],
    ...['-T', String(seconds), '-f', script],
    ...Object.entries(variables).flatMap(([key, value]) => ['-D', `${key}=${value}`]),
    ...['-h', target.host, '-p', String(target.port), '-U', target.user, target.database],
  ];
  return {
    name,
    async window(seconds) {
      const cpu = await cpuWindow(serverPid ?? process.pid);
      const { stdout } = await run('pgbench', args(seconds), {
        maxBuffer: 16 * 2 ** 20,
        // libpq's default GSS encryption probe is a message PGlite's socket server does not answer.
        env: { ...process.env, PGGSSENCMODE: 'disable' },
      });
      const used = await cpu();
      const tps = /^tps = ([\d.]+)/m.exec(stdout);
      const latency = /^latency average = ([\d.]+) ms/m.exec(stdout);
      // A window in which no client finished a transaction (a loaded machine) prints no tps: 0/s.
      const none = /^number of transactions actually processed: 0$/m.test(stdout);
      if (!tps && !none) throw new Error(`pgbench printed no tps:\n${stdout}`);
      return {
        perSecond: tps ? Number(tps[1]) : 0,
        meanMs: Number(latency?.[1]),
        ...used,
        ...(serverPid === undefined ? { serverCores: Number.NaN } : {}),
      };
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * The same script run through `pg` instead of libpq (bench/datapath/pg-script-run.ts, a process
 * per window): the ceiling of a target set against "the plain SQL through `pg`", which decodes every
 * row into an object as a Node service does. `clientCores` is that process's CPU.
 */
export const pgClientContender: typeof pgbenchContender = async (
  name,
  target,
  statement,
  variables,
  clients,
  serverPid,
) => {
  return {
    name,
    async window(seconds) {
      const cpu = await cpuWindow(serverPid ?? process.pid);
      const job = { script: statement, variables, target, clients, seconds };
      const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/datapath/pg-script-run.ts'], {
        env: { ...process.env, PG_SCRIPT_RUN: JSON.stringify(job) },
      });
      const used = await cpu();
      const done = JSON.parse(stdout) as { transactions: number; seconds: number; cores: number };
      const perSecond = done.transactions / done.seconds;
      return {
        ...used,
        perSecond,
        meanMs: (clients / perSecond) * 1000,
        clientCores: done.cores,
        ...(serverPid === undefined ? { serverCores: Number.NaN } : {}),
      };
    },
    close: async () => {},
  };
};
