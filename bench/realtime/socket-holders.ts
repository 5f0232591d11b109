import { spawn } from 'node:child_process';
import type { ClosedReport, HolderCommand, HolderReport, ReadyReport } from '../socket-holder.js';
import { progress } from './progress.js';
import { exited, stopChild } from './servers.js';

/** Idle authenticated sockets held by client processes (bench/socket-holder.ts), off this event loop. */

/** Sockets per client process: each needs a file descriptor on the client side as well. */
export const PER_HOLDER = 4_500;
/** Connections being opened or authenticated at once, over all client processes. */
export const CONNECT_CONCURRENCY = 200;
const PROGRESS_STEP = 2_000;
const READY_TIMEOUT_MS = 15 * 60_000;

export interface HeldTarget {
  url: string;
  tokens: string[];
}

export interface HeldSockets {
  /** Authenticated connections held, per target. */
  authed: number[];
  failed: number;
  failures: Record<string, number>;
  retries: number;
  ms: number;
  close(): Promise<{ dropped: Record<string, number> }>;
  kill(): void;
}

/**
 * Opens every target's tokens as idle authenticated sockets, spread over client processes of at
 * most PER_HOLDER sockets each, CONNECT_CONCURRENCY connecting at once in total.
 */
export async function holdSockets(label: string, targets: HeldTarget[]): Promise<HeldSockets> {
  const plan = targets.flatMap((target, index) => {
    const chunks: { target: number; url: string; tokens: string[] }[] = [];
    for (let start = 0; start < target.tokens.length; start += PER_HOLDER) {
      chunks.push({ target: index, url: target.url, tokens: target.tokens.slice(start, start + PER_HOLDER) });
    }
    return chunks;
  });
  const total = targets.reduce((sum, t) => sum + t.tokens.length, 0);
  const concurrency = Math.max(1, Math.floor(CONNECT_CONCURRENCY / plan.length));
  progress(
    `${label}: opening ${total} sockets from ${plan.length} client process(es), ${concurrency * plan.length} connecting at once...`,
  );
  const started = performance.now();
  let authedSoFar = 0;
  let nextMark = PROGRESS_STEP;
  const holders = plan.map((chunk) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/socket-holder.ts'], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let onReady: (report: ReadyReport) => void = () => {};
    let onClosed: (report: ClosedReport) => void = () => {};
    let onExit: (error: Error) => void = () => {};
    const ready = new Promise<ReadyReport>((done, fail) => {
      onReady = done;
      onExit = fail;
    });
    const closed = new Promise<ClosedReport>((done) => {
      onClosed = done;
    });
    child.on('message', (message: HolderReport) => {
      if (message.type === 'progress') {
        authedSoFar += message.authed;
        while (authedSoFar >= nextMark) {
          progress(
            `${label}: ${nextMark}/${total} authenticated (${((performance.now() - started) / 1000).toFixed(1)} s)`,
          );
          nextMark += PROGRESS_STEP;
        }
      } else if (message.type === 'ready') onReady(message);
      else if (message.type === 'closed') onClosed(message);
    });
    child.once('exit', (code, signal) => {
      onExit(new Error(`a socket holder exited early (${signal ?? code})`));
      onClosed({ type: 'closed', dropped: {} });
    });
    child.send({
      type: 'open',
      url: chunk.url,
      tokens: chunk.tokens,
      concurrency,
      progressEvery: 100,
    } satisfies HolderCommand);
    return { child, chunk, ready, closed };
  });
  const kill = () => {
    for (const { child } of holders) if (!exited(child)) child.kill('SIGKILL');
  };
  try {
    let timer: NodeJS.Timeout | undefined;
    const reports = await Promise.race([
      Promise.all(holders.map((h) => h.ready)),
      new Promise<never>((_, fail) => {
        timer = setTimeout(() => fail(new Error(`${label}: sockets not ready in time`)), READY_TIMEOUT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
    const authed = targets.map(() => 0);
    const failures: Record<string, number> = {};
    let failed = 0;
    let retries = 0;
    reports.forEach((report, index) => {
      const target = holders[index]?.chunk.target as number;
      authed[target] = (authed[target] ?? 0) + report.authed;
      failed += report.failed;
      retries += report.retries;
      for (const [reason, count] of Object.entries(report.failures))
        failures[reason] = (failures[reason] ?? 0) + count;
    });
    const ms = performance.now() - started;
    progress(
      `${label}: ${authed.reduce((a, b) => a + b, 0)}/${total} authenticated in ${(ms / 1000).toFixed(1)} s` +
        ` (${failed} failed, ${retries} retried)${failed ? ` ${JSON.stringify(failures)}` : ''}`,
    );
    return {
      authed,
      failed,
      failures,
      retries,
      ms,
      kill,
      async close() {
        progress(`${label}: closing the sockets...`);
        for (const { child } of holders) {
          if (!exited(child)) child.send({ type: 'close' } satisfies HolderCommand);
        }
        const dropped: Record<string, number> = {};
        for (const report of await Promise.all(holders.map((h) => h.closed))) {
          for (const [code, count] of Object.entries(report.dropped))
            dropped[code] = (dropped[code] ?? 0) + count;
        }
        await Promise.all(holders.map(({ child }) => stopChild(child, 5_000)));
        return { dropped };
      },
    };
  } catch (error) {
    kill();
    throw error;
  }
}
