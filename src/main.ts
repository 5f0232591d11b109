#!/usr/bin/env node
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { App } from './app.js';
import { configFrom, loadConfig, StartupError } from './config.js';
import type { ControlReply, ControlRequest } from './platform/control-channel.js';

// Each command imports what it needs when it runs: the service's modules, the ORM and the database
// driver take seconds to load, which `help`, a usage mistake or a bad setting should not wait for.

const usage = `Usage: atrium <command>

Commands:
  serve               Run the HTTP API and the realtime gateway (default).
  migrate [up]        Apply pending database migrations.
  migrate status      List applied and pending migrations.
  keys create         Create an RS256 signing key pair under DATA_DIR/keys (the newest signs).
  admin grant <username> <role>    Give an account a role (user, moderator, admin).
  admin revoke <username> <role>   Take a role away again.
  economy verify      Recompute every balance from the ledger and print the differences; exits 1
                      when there are any (docs/economy.md, "Verify and reconcile").
  openapi [--out <file>]  Write the OpenAPI document of the REST API as JSON (stdout by default).
  help                Show this text.

Configuration comes from the environment; see README.md.`;

async function main(argv: string[]): Promise<number> {
  const [command = 'serve', sub] = argv;
  if (command === 'help' || command === '--help' || command === '-h') {
    console.log(usage);
    return 0;
  }
  // The document does not depend on the environment's settings, so a bad one does not stop it.
  if (command === 'openapi') return openapi(argv.slice(1));
  const config = loadConfig();
  switch (command) {
    case 'serve':
      return serve(config);
    case 'migrate':
      return migrate(config, sub ?? 'up');
    case 'admin':
      return admin(config, argv.slice(1));
    case 'economy':
      if (sub !== 'verify' || argv.length !== 2) break;
      // Every stored balance against the sum of its entries, every transaction's sum, every
      // entry's balance_after, read in one snapshot (docs/economy.md).
      return runCommand(config, { command: 'economy.verify' });
    case 'keys': {
      if (sub !== 'create') break;
      const { createSigningKey } = await import('./platform/auth/keys.js');
      const key = await createSigningKey(config.DATA_DIR);
      console.log(`created key ${key.kid} at ${key.privateKeyPath}`);
      return 0;
    }
  }
  console.error(`Unknown command: ${argv.join(' ')}\n\n${usage}`);
  return 2;
}

async function serve(config: ReturnType<typeof loadConfig>): Promise<number> {
  const [{ default: cluster }, { superviseWorkers, workerCount }, { createLogger }] = await Promise.all([
    import('node:cluster'),
    import('./platform/cluster/supervisor.js'),
    import('./platform/log.js'),
  ]);
  const count = workerCount(config);
  if (cluster.isPrimary && count > 1) return superviseWorkers(config, count, createLogger(config));
  const { workerSlot } = await import('./platform/cluster/worker-messages.js');
  const slot = workerSlot();
  return slot === undefined ? serveAlone(config) : serveAsWorker(config, slot);
}

/** One process serving: SIGTERM or SIGINT drains it, a second signal exits at once. */
async function serveAlone(config: ReturnType<typeof loadConfig>): Promise<number> {
  const { buildApp } = await import('./app.js');
  const app = await buildApp(config);
  const stop = drainOnce(app);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  await app.listen();
  return -1;
}

/**
 * A worker of worker mode (src/platform/cluster/supervisor.ts). It drains when the supervisor
 * says so, or on its own SIGTERM (a second signal exits at once); SIGINT is left to the
 * supervisor, which relays a terminal's Ctrl-C that reached every worker too. Slot 1 serves the
 * host's control channel, so its replacement takes the socket over after a crash. Once ready it
 * tells the supervisor it is alive, which replaces it when its event loop stalls.
 */
async function serveAsWorker(config: ReturnType<typeof loadConfig>, slot: number): Promise<number> {
  process.on('SIGINT', () => {});
  const [
    { buildApp },
    { createLogger },
    { contributeToHostMetrics },
    { isWorkerMessage, tellSupervisor, tellSupervisorAlive },
  ] = await Promise.all([
    import('./app.js'),
    import('./platform/log.js'),
    import('./platform/cluster/host-metrics.js'),
    import('./platform/cluster/worker-messages.js'),
  ]);
  const shareMetrics = contributeToHostMetrics();
  const app = await buildApp(config, { log: createLogger(config).child({ worker: slot }) });
  shareMetrics(app.metrics.registries);
  const stop = drainOnce(app);
  process.on('SIGTERM', stop);
  process.on('message', (message: unknown) => {
    if (isWorkerMessage(message) && message.type === 'atrium:shutdown') stop('supervisor');
  });
  await app.listen({ controlChannel: slot === 1 });
  tellSupervisor({ type: 'atrium:ready' });
  tellSupervisorAlive(config.WORKER_STALL_TIMEOUT_SECONDS);
  return -1;
}

/**
 * The drain of a signal: logs, closes the app and exits 0, or 1 when any step of close() failed
 * (each failure is logged as it happens). A second signal means the operator does not want to
 * wait; the supervisor's request is not a signal, so one with a signal is still a single drain.
 */
function drainOnce(app: Pick<App, 'log' | 'close'>) {
  let stopping = false;
  return (reason: NodeJS.Signals | 'supervisor') => {
    if (stopping) {
      if (reason !== 'supervisor') process.exit(1);
      return;
    }
    stopping = true;
    app.log.info(
      reason === 'supervisor' ? { requestedBy: 'supervisor' } : { signal: reason },
      'shutting down',
    );
    app.close().then(
      () => {
        app.log.info('shutdown complete');
        process.exit(0);
      },
      () => {
        app.log.error('shutdown complete with failures (each one logged above); exiting with 1');
        process.exit(1);
      },
    );
  };
}

async function admin(config: ReturnType<typeof loadConfig>, args: string[]): Promise<number> {
  const [change, username, role] = args;
  if ((change !== 'grant' && change !== 'revoke') || !username || !role) {
    console.error(`Usage: atrium admin grant|revoke <username> <role>\n\n${usage}`);
    return 2;
  }
  return runCommand(config, { command: `admin.${change}`, args: { username, role } });
}

/**
 * Runs a command of the control channel: on the server running on this DATA_DIR when there is
 * one (the embedded database cannot be opened twice), else on the database opened here. Both
 * print the same lines and exit with the same code.
 */
async function runCommand(config: ReturnType<typeof loadConfig>, request: ControlRequest): Promise<number> {
  const { callControl } = await import('./platform/control-client.js');
  const reply = (await callControl(config.DATA_DIR, request)) ?? (await runLocally(config, request));
  if (!reply.ok) {
    console.error(`${reply.error.code}: ${reply.error.message}`);
    return 1;
  }
  for (const line of reply.stdout) console.log(line);
  for (const line of reply.stderr) console.error(line);
  return reply.exit_code;
}

async function runLocally(
  config: ReturnType<typeof loadConfig>,
  request: ControlRequest,
): Promise<ControlReply> {
  const [
    { modules },
    { registerCommands },
    { ControlChannel },
    { openDatabase },
    { createLogger },
    { migrateUp },
  ] = await Promise.all([
    import('./modules/index.js'),
    import('./platform/module.js'),
    import('./platform/control-channel.js'),
    import('./platform/db.js'),
    import('./platform/log.js'),
    import('./platform/migrate.js'),
  ]);
  const db = await openDatabase(config);
  try {
    await migrateUp(db, config.DATABASE_URL);
    const channel = new ControlChannel({ log: createLogger(config) });
    return await registerCommands(channel, modules, () => db.data).execute(request);
  } finally {
    await db.close();
  }
}

/**
 * Builds the app on the embedded defaults in a temporary DATA_DIR, without listening or migrating
 * (no route needs a table to be described), writes its OpenAPI document and removes everything
 * again. Logs go to stderr so stdout carries the document alone; `npm run lint` checks it.
 */
async function openapi(args: string[]): Promise<number> {
  const out = openapiOutput(args);
  if (out === null) {
    console.error(`Usage: atrium openapi [--out <file>]\n\n${usage}`);
    return 2;
  }
  const [{ buildApp }, { createLogger }] = await Promise.all([
    import('./app.js'),
    import('./platform/log.js'),
  ]);
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-openapi-'));
  try {
    // The document needs the routes, not a database: a server URL nothing connects to spares the
    // command starting PGlite and running initdb (seconds) for a database it never queries.
    const config = configFrom({
      DATA_DIR: dataDir,
      DATABASE_URL: 'postgres://document-only.invalid/atrium',
      MIGRATE_ON_START: false,
      LOG_LEVEL: 'error',
    });
    const app = await buildApp(config, { log: createLogger(config, process.stderr) });
    let document: string;
    try {
      document = `${JSON.stringify(app.http.swagger(), null, 2)}\n`;
    } finally {
      await app.close();
    }
    if (out) {
      await mkdir(dirname(out), { recursive: true });
      await writeFile(out, document);
    } else {
      await new Promise<void>((resolve, reject) =>
        process.stdout.write(document, (error) => (error ? reject(error) : resolve())),
      );
    }
    return 0;
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The file of `openapi [--out <file>]` or `--out=<file>`, undefined for stdout, null for a usage mistake. */
function openapiOutput(args: string[]): string | undefined | null {
  if (args.length === 0) return undefined;
  const [flag = '', file] = args;
  if (args.length === 2 && flag === '--out' && file) return file;
  if (args.length === 1 && flag.startsWith('--out=') && flag.length > '--out='.length) {
    return flag.slice('--out='.length);
  }
  return null;
}

async function migrate(config: ReturnType<typeof loadConfig>, sub: string): Promise<number> {
  if (sub !== 'up' && sub !== 'status') {
    console.error(`Unknown migrate command: ${sub}\n\n${usage}`);
    return 2;
  }
  const [{ openDatabase }, { migrateUp, migrationStatus }] = await Promise.all([
    import('./platform/db.js'),
    import('./platform/migrate.js'),
  ]);
  const db = await openDatabase(config);
  try {
    if (sub === 'status') {
      const status = await migrationStatus(db);
      for (const name of status.executed) console.log(`applied  ${name}`);
      for (const name of status.pending) console.log(`pending  ${name}`);
      return 0;
    }
    console.log('applying migrations...');
    const applied = await migrateUp(db, config.DATABASE_URL);
    for (const name of applied) console.log(`applied  ${name}`);
    console.log(applied.length === 0 ? 'database is up to date' : `${applied.length} migration(s) applied`);
    return 0;
  } finally {
    await db.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve returns -1 and keeps running until a signal.
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    // 78 is EX_CONFIG: the operator has something to fix (a setting, a key, an extension), and
    // one line says what. Worker mode's supervisor stops the service on it instead of retrying.
    if (error instanceof StartupError) {
      console.error(error.message);
      process.exit(78);
    }
    console.error(error);
    process.exit(1);
  },
);
