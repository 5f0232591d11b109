import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';

/** Memory and CPU use of processes, read from /proc. */

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export async function rssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}

/**
 * CPU seconds (user + system) the process and its live child processes have used so far: a
 * service in worker mode (WORKERS) serves from the workers its primary forked.
 */
export function cpuSeconds(pid: number): Promise<number> {
  return summedOverChildren(pid, ownCpuSeconds);
}

/** `read` of the process and of each of its live child processes, summed. */
export async function summedOverChildren(
  pid: number,
  read: (pid: number) => Promise<number>,
): Promise<number> {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  const pids = [pid, ...children.split(' ').filter(Boolean).map(Number)];
  const each = await Promise.all(
    // A child that exited since the list was read has nothing more to add.
    pids.map((p, i) => read(p).catch((error) => (i === 0 ? Promise.reject(error) : 0))),
  );
  return each.reduce((sum, value) => sum + value, 0);
}

async function ownCpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of /proc/<pid>/stat (utime, stime); index 0 here is field 3.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds the whole machine spent busy (all cores, everything but idle and iowait) so far. */
async function machineBusySeconds(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const total = ticks.reduce((sum, t) => sum + t, 0);
  return (total - (ticks[3] ?? 0) - (ticks[4] ?? 0)) / CLOCK_TICKS;
}

export interface CpuUse {
  /** CPU cores the server process used during the measured window. */
  serverCores: number;
  /** CPU cores this (client) process used during the measured window. */
  clientCores: number;
  /** CPU cores busy on the whole machine during the window (other processes included). */
  machineCores: number;
}

/** Starts a measured window; the function it returns ends it and gives the CPU use over it, in cores. */
export async function cpuWindow(serverPid: number): Promise<() => Promise<CpuUse>> {
  const [server, machine] = await Promise.all([cpuSeconds(serverPid), machineBusySeconds()]);
  const client = process.cpuUsage();
  const started = performance.now();
  return async () => {
    const seconds = (performance.now() - started) / 1000;
    const [serverAfter, machineAfter] = await Promise.all([cpuSeconds(serverPid), machineBusySeconds()]);
    const clientUsed = process.cpuUsage(client);
    return {
      serverCores: (serverAfter - server) / seconds,
      clientCores: (clientUsed.user + clientUsed.system) / 1e6 / seconds,
      machineCores: (machineAfter - machine) / seconds,
    };
  };
}

/** The RSS and CPU figures must be the node process itself, not a wrapper (npm, tsx CLI, a shell). */
export async function assertNodeProcess(pid: number, scripts: readonly string[]): Promise<void> {
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
  if (!basename(argv[0] ?? '').startsWith('node') || !scripts.some((script) => argv.includes(script))) {
    throw new Error(`pid ${pid} is not the node process running ${scripts.join(' or ')}: ${argv.join(' ')}`);
  }
}

/**
 * CPU seconds used so far by the local Postgres server (every backend, and through the postmaster's
 * children times the backends that already exited, such as pgbench's) and by Redis: what a
 * request costs the databases, beside what it costs the service.
 */
export async function databaseCpuSeconds(): Promise<number> {
  let total = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const name = /\(([^)]*)\)/.exec(stat)?.[1] ?? '';
    if (name !== 'postgres' && !name.startsWith('redis-server')) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime; for the postmaster (its parent is no postgres) also cutime, cstime.
    total += Number(fields[11]) + Number(fields[12]);
    if (name === 'postgres' && !(await isPostgres(fields[1] ?? '')))
      total += Number(fields[13]) + Number(fields[14]);
  }
  return total / CLOCK_TICKS;
}

async function isPostgres(pid: string): Promise<boolean> {
  return (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim() === 'postgres';
}
