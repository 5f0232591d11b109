import { ACTION_DRAWS, Actions } from './actions.js';
import { Checker, touchedNothing } from './checks.js';
import { Client, type Counters, NoAnswerError, UnavailableError } from './client.js';
import { Driver, SimFailure } from './driver.js';
import { FAULT_DRAWS, type FaultCounts, Faults } from './faults.js';
import { Rng } from './rng.js';
import { SimService } from './service.js';
import { castUsers } from './setup.js';

/**
 * One seeded run of the simulation (docs/economy.md, "Seeded simulation"): the service started
 * on a database of its own, `steps` steps of the driver's actions and the seed's faults, the
 * invariants checked after each, `atrium economy verify` now and then and at the end.
 */

export interface SimOptions {
  seed: number;
  steps: number;
  faults: boolean;
  /** The chance that a step ends with a fault. */
  faultRate: number;
  /** Steps between the whole-database comparisons (and after the last step). */
  fullEvery: number;
  /** Steps between runs of `atrium economy verify` (and after the last step). */
  verifyEvery: number;
  /** Steps between progress lines; 0 for none. */
  progressEvery: number;
  verbose: boolean;
  keepDatabase: boolean;
  /** A 503 while no fault is under way fails the run (else it is sent again, and listed). */
  failOn503?: boolean;
  /** Writes each request, by step, key and slots, as it is sent: two runs of a seed can be compared. */
  trace?: (line: string) => void;
  /** The Postgres server to make the database on (its own database is only connected to). */
  serverUrl: string;
  log: (line: string) => void;
}

export interface SimResult {
  steps: number;
  faults: FaultCounts;
  counters: Counters;
  verifies: number;
  elapsedMs: number;
  /** How often each operation met each answer. */
  outcomes: Map<string, number>;
  /** Answers that timing decided: refunds as their hold ended, payout requests as holds came due. */
  decidedByTiming: { refunds: number; payouts: number };
  failure?: { step: number; action: string; expected: string; happened: string };
}

/** How long one request may go unanswered, through every retry, before the run fails. */
const ANSWER_DEADLINE_MS = 180_000;

export async function simulate(options: SimOptions): Promise<SimResult> {
  const started = Date.now();
  const service = await SimService.create(options.serverUrl, options.seed, options.verbose);
  let checker: Checker | undefined;
  const result: SimResult = {
    steps: 0,
    faults: { kills: 0, cuts: 0 },
    counters: undefined as unknown as Counters,
    verifies: 0,
    elapsedMs: 0,
    outcomes: new Map(),
    decidedByTiming: { refunds: 0, payouts: 0 },
  };
  let driver: Driver | undefined;
  try {
    await service.start();
    const { model, cast } = await castUsers(service);
    const client = new Client(service.baseUrl, ANSWER_DEADLINE_MS, options.failOn503);
    result.counters = client.counters;
    driver = new Driver(model, client);
    result.outcomes = driver.outcomes;
    driver.trace = options.trace;
    result.decidedByTiming = model.decidedByTiming;
    const actions = new Actions(driver, cast);
    const faults = new Faults(driver, actions, cast, service, options.faultRate);
    result.faults = faults.counts;
    checker = await Checker.connect(service.directUrl, model);
    const actionStream = new Rng(options.seed, 1);
    const faultStream = new Rng(options.seed, 2);
    const loopStarted = Date.now();
    for (let step = 1; step <= options.steps; step++) {
      const touched = touchedNothing();
      driver.begin(step, touched);
      const stepStarted = Date.now();
      const actionDraws = actionStream.block(ACTION_DRAWS);
      const faultDraws = faultStream.block(FAULT_DRAWS);
      await actions.act(actionDraws);
      if (options.faults) await faults.maybe(faultDraws);
      if (service.crashed)
        throw new SimFailure(driver.action, 'the service to keep running', service.crashed);
      const last = step === options.steps;
      const problems = await checker.check(stepStarted, touched, last || step % options.fullEvery === 0);
      if (problems.length > 0) {
        throw new SimFailure(driver.action, 'the invariants to hold', `\n    ${problems.join('\n    ')}`);
      }
      if (last || step % options.verifyEvery === 0) {
        const verified = await service.cli(['economy', 'verify']);
        result.verifies++;
        if (verified.code !== 0) {
          throw new SimFailure(
            driver.action,
            '`atrium economy verify` to exit 0',
            `exit ${verified.code}:\n${verified.output}`,
          );
        }
      }
      result.steps = step;
      if (options.progressEvery > 0 && (step % options.progressEvery === 0 || last)) {
        const c = client.counters;
        const seconds = ((Date.now() - loopStarted) / 1000).toFixed(1);
        options.log(
          `step ${step}/${options.steps}  faults ${faults.counts.kills + faults.counts.cuts} (kill -9 ${faults.counts.kills}, db cut ${faults.counts.cuts})  requests ${c.requests} (attempts ${c.attempts}, replays ${c.replays})  elapsed ${seconds}s`,
        );
      }
    }
  } catch (error) {
    const step = result.steps + 1;
    const action = driver ? [driver.action, ...driver.stepRequests].join('\n    ') : 'setup';
    if (error instanceof SimFailure) {
      result.failure = { step, action: error.action, expected: error.expected, happened: error.happened };
    } else if (error instanceof UnavailableError) {
      result.failure = {
        step,
        action,
        expected: 'no 503 while no fault is under way',
        happened: error.message,
      };
    } else if (error instanceof NoAnswerError) {
      result.failure = { step, action, expected: 'an answer', happened: error.message };
    } else {
      result.failure = {
        step,
        action,
        expected: 'no error',
        happened: (error as Error).stack ?? String(error),
      };
    }
    if (service.tail.length)
      result.failure.happened += `\n  the service's last output:\n    ${service.tail.slice(-15).join('\n    ')}`;
  } finally {
    await checker?.close();
    await service.close(options.keepDatabase);
    if (options.keepDatabase) options.log(`database kept: ${service.directUrl}`);
  }
  result.elapsedMs = Date.now() - started;
  return result;
}
