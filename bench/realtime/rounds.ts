import { setTimeout as sleep } from 'node:timers/promises';
import { whole } from './format.js';
import type { CpuUse } from './process-stats.js';
import { progress } from './progress.js';
import { median } from './stats.js';

/**
 * Interleaved load windows. This machine's speed drifts: the same server measured in two
 * consecutive windows can differ by tens of percent, so a ratio of two figures measured minutes
 * apart says more about the drift than about the servers. Servers compared with each other are
 * therefore all running, and take turns: a warm-up window each, then rounds of one window per
 * server, and each server's figure is the median of its windows.
 */

/** Rounds when `--seconds` allows windows of at least MIN_WINDOW_SECONDS. */
export const ROUNDS = 5;
/** Shorter windows would mostly measure the start and end of a window. */
export const MIN_WINDOW_SECONDS = 2;
export const WARMUP_SECONDS = 2;
/** Pause before each window, so one server's leftover work does not land in the next one's window. */
export const WINDOW_GAP_MS = 500;

export interface RoundSchedule {
  rounds: number;
  /** Whole seconds: autocannon ends its runs on its once-a-second sample tick. */
  windowSeconds: number;
}

/** Spreads `seconds` of measured time per server over `maxRounds` windows, fewer if they would be too short. */
export function roundSchedule(seconds: number, maxRounds = ROUNDS): RoundSchedule {
  const rounds = Math.min(maxRounds, Math.max(1, Math.floor(seconds / MIN_WINDOW_SECONDS)));
  return { rounds, windowSeconds: Math.max(MIN_WINDOW_SECONDS, Math.round(seconds / rounds)) };
}

/** What one load window measured on one server. */
export interface WindowFigures extends CpuUse {
  /** Operations (acknowledged frames, completed requests) per second over the window. */
  perSecond: number;
}

export interface Contender<W extends WindowFigures> {
  name: string;
  /** Loads the server for `seconds` and measures it over that time. */
  window(seconds: number): Promise<W>;
}

export interface ContenderRounds<W extends WindowFigures> {
  name: string;
  /** Not part of the figures; kept for its errors. */
  warmUp: W;
  /** One per round, in round order, so index i of two contenders ran in the same round. */
  windows: W[];
}

/**
 * A WARMUP_SECONDS window per contender, then `schedule.rounds` rounds of one window each. The
 * first contender of a round rotates, so a drift within a round does not always favour the same one.
 */
export async function interleavedRounds<W extends WindowFigures>(
  label: string,
  contenders: Contender<W>[],
  schedule: RoundSchedule,
): Promise<ContenderRounds<W>[]> {
  const warmUps: W[] = [];
  for (const contender of contenders) {
    await sleep(WINDOW_GAP_MS);
    warmUps.push(await contender.window(WARMUP_SECONDS));
  }
  const windows: W[][] = contenders.map(() => []);
  for (let round = 0; round < schedule.rounds; round++) {
    for (let turn = 0; turn < contenders.length; turn++) {
      const index = (round + turn) % contenders.length;
      await sleep(WINDOW_GAP_MS);
      windows[index]?.push(await (contenders[index] as Contender<W>).window(schedule.windowSeconds));
    }
    const figures = contenders.map(
      (c, index) => `${c.name} ${whole(windows[index]?.[round]?.perSecond ?? 0)}/s`,
    );
    progress(`${label}, round ${round + 1}/${schedule.rounds}: ${figures.join(', ')}`);
  }
  return contenders.map((contender, index) => ({
    name: contender.name,
    warmUp: warmUps[index] as W,
    windows: windows[index] as W[],
  }));
}

export interface RoundsSummary {
  /** Median, lowest and highest of the windows' operations per second. */
  median: number;
  min: number;
  max: number;
  /** Medians of the windows' figures. */
  serverCores: number;
  /** Server CPU µs per operation. */
  serverUsPerOp: number;
  clientCores: number;
  machineCores: number;
}

export function summarize(windows: readonly WindowFigures[]): RoundsSummary {
  const rates = windows.map((w) => w.perSecond);
  return {
    median: median(rates),
    min: Math.min(...rates),
    max: Math.max(...rates),
    serverCores: median(windows.map((w) => w.serverCores)),
    serverUsPerOp: median(windows.map((w) => (w.serverCores * 1e6) / w.perSecond)),
    clientCores: median(windows.map((w) => w.clientCores)),
    machineCores: median(windows.map((w) => w.machineCores)),
  };
}

/** The ratio the targets are about, and the spread of the same ratio taken round by round. */
export function ratio(
  subject: ContenderRounds<WindowFigures>,
  reference: ContenderRounds<WindowFigures>,
): { ratio: number; perRoundMin: number; perRoundMax: number } {
  const perRound = subject.windows.map(
    (w, round) => w.perSecond / ((reference.windows[round] as WindowFigures).perSecond || Number.NaN),
  );
  return {
    ratio: summarize(subject.windows).median / summarize(reference.windows).median,
    perRoundMin: Math.min(...perRound),
    perRoundMax: Math.max(...perRound),
  };
}
