import { type ChildProcess, fork } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { cpuSeconds } from '../realtime/process-stats.js';
import type { Contender, WindowFigures } from '../realtime/rounds.js';
import type { LoadReply, LoadRequest, LoadWindow, Prepared, Spec } from './specs.js';

/** The bench's side of a load process (bench/peers/load.ts), and the CPU a window cost each side. */

/** A server under test: its process (and the workers it forked), its database, whether it uses Redis. */
export interface Server {
  name: string;
  pid: number;
  database: string;
  usesRedis: boolean;
}

export interface PeerWindow extends WindowFigures, LoadWindow {
  /** Cores the side's PostgreSQL backends (and Redis, when it uses it) were busy during the window. */
  databaseCores: number;
  /** Server and database CPU µs per operation (the drain after the window included). */
  cpuUsPerOp: number;
}

export class LoadProcess {
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly waiting = new Map<number, (reply: LoadReply) => void>();

  constructor() {
    this.child = fork('bench/peers/load.ts', [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
    this.child.on('message', (reply: LoadReply) => {
      this.waiting.get(reply.id)?.(reply);
      this.waiting.delete(reply.id);
    });
  }

  get pid(): number {
    return this.child.pid as number;
  }

  private async ask<T>(command: LoadRequest): Promise<T> {
    const id = this.nextId++;
    const reply = await new Promise<LoadReply>((done) => {
      this.waiting.set(id, done);
      this.child.send({ ...command, id });
    });
    if ('error' in reply) throw new Error(`load process: ${reply.error}`);
    return reply.result as T;
  }

  prepare(spec: Spec): Promise<Prepared> {
    return this.ask({ op: 'prepare', spec });
  }

  window(seconds: number): Promise<LoadWindow> {
    return this.ask({ op: 'window', seconds });
  }

  release(): Promise<null> {
    return this.ask({ op: 'release' });
  }

  close(): void {
    this.child.disconnect();
  }
}

const CLOCK_TICKS = 100;

/**
 * CPU ticks so far of each PostgreSQL backend serving `database` (its process title names it)
 * and, when asked, of Redis, by pid: the share of the shared database servers a side's work costs.
 */
async function databaseTicks(database: string, withRedis: boolean): Promise<Map<string, number>> {
  const ticks = new Map<string, number>();
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const name = /\(([^)]*)\)/.exec(stat)?.[1] ?? '';
    let counted = withRedis && name.startsWith('redis-server');
    if (name === 'postgres') {
      const title = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      // "postgres: <cluster>: <user> <database> <client> <state>"
      counted = title.split(' ').includes(database);
    }
    if (!counted) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks.set(pid, Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

/**
 * CPU seconds between two readings: a backend that started in between counts whole, one that
 * exited (a pool letting a connection go) takes its last ticks with it and counts nothing.
 */
function databaseSecondsBetween(before: Map<string, number>, after: Map<string, number>): number {
  let ticks = 0;
  for (const [pid, now] of after) ticks += now - (before.get(pid) ?? 0);
  return ticks / CLOCK_TICKS;
}

async function machineBusySeconds(): Promise<number> {
  const ticks = ((await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (ticks.reduce((sum, t) => sum + t, 0) - (ticks[3] ?? 0) - (ticks[4] ?? 0)) / CLOCK_TICKS;
}

/** CPU in use by a side's processes, its load process and the whole machine, read together. */
async function cpuReading(server: Server, load: LoadProcess) {
  const [serverSeconds, database, client, machine] = await Promise.all([
    cpuSeconds(server.pid),
    databaseTicks(server.database, server.usesRedis),
    cpuSeconds(load.pid),
    machineBusySeconds(),
  ]);
  return { serverSeconds, database, client, machine, at: performance.now() };
}

/** Runs `window` on the side's load process and measures the CPU it cost around it. */
export async function measuredWindow(
  server: Server,
  load: LoadProcess,
  window: () => Promise<LoadWindow>,
): Promise<PeerWindow> {
  const before = await cpuReading(server, load);
  const figures = await window();
  const after = await cpuReading(server, load);
  const seconds = (after.at - before.at) / 1000;
  return {
    ...figures,
    perSecond: figures.ops / figures.seconds,
    serverCores: (after.serverSeconds - before.serverSeconds) / seconds,
    databaseCores: databaseSecondsBetween(before.database, after.database) / seconds,
    clientCores: (after.client - before.client) / seconds,
    machineCores: (after.machine - before.machine) / seconds,
    cpuUsPerOp:
      ((after.serverSeconds -
        before.serverSeconds +
        databaseSecondsBetween(before.database, after.database)) *
        1e6) /
      figures.ops,
  };
}

/** A side as interleavedRounds sees it, once its load process is prepared. */
export function contender(server: Server, load: LoadProcess): Contender<PeerWindow> {
  return { name: server.name, window: (seconds) => measuredWindow(server, load, () => load.window(seconds)) };
}
