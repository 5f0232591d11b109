import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { registerUser, uniqueUsername } from '../helpers/accounts.js';
import { buildTestApp } from '../helpers/app.js';
import { frameCaseArbitrary, frameTypes, RAW_TARGET, rawCaseArbitrary } from './frame-cases.js';
import { describeFrameCase, FrameDriver } from './frame-driver.js';
import { memoryStart, overBound, runTarget, settings, summary, type TargetStats } from './harness.js';

/**
 * Sends every client frame type of protocol/frames.ts, and raw bytes aimed at the msgpack decoder,
 * to the real gateway over real WebSockets (see docs/fuzzing.md). `npm test` runs a short pass
 * with a fixed seed; `npm run fuzz` runs FUZZ_CASES per frame type.
 */
const CASES = settings.cases || 20;
const MAX_FRAME_BYTES = 64 * 1024;
/** The gateway lets uWS drop a connection only for messages above four times the frame limit. */
const HARD_CEILING_BYTES = MAX_FRAME_BYTES * 4;

const app = await buildTestApp({
  WS_MAX_FRAME_BYTES: MAX_FRAME_BYTES,
  // The fuzzer sends thousands of frames a second on one connection and may run for longer than
  // the auth deadline and the token's lifetime; the flood and deadline rules have their own tests.
  WS_MAX_FRAMES_PER_SECOND: 100_000,
  WS_AUTH_TIMEOUT_MS: 300_000,
  ACCESS_TOKEN_TTL_SECONDS: 86_400,
});
const fuzzUser = await registerUser(app, uniqueUsername('fuzz'), randomBytes(12).toString('hex'));
const peer = await registerUser(app);
const dictionary = {
  user_ids: [[peer.user.id, fuzzUser.user.id], [peer.user.id]],
  token: [fuzzUser.access_token],
};
const targets = [
  ...frameTypes.map((type) => ({ name: type, arbitrary: frameCaseArbitrary(type, dictionary) })),
  { name: RAW_TARGET, arbitrary: rawCaseArbitrary },
].filter((target) => target.name.includes(settings.only));

describe('Gateway fuzzing of every client frame type', () => {
  const driver = new FrameDriver(app.wsUrl, fuzzUser.access_token, MAX_FRAME_BYTES, HARD_CEILING_BYTES);
  const all: TargetStats[] = [];
  const startMemory = memoryStart();
  const startedAt = performance.now();

  afterAll(async () => {
    process.stdout.write(summary('frames', all, startMemory.bounded, startedAt));
    driver.recycle();
    await app.close();
  });

  for (const target of targets) {
    it(
      `${target.name} frames, valid and hostile, before and after auth, get documented answers and never take the gateway down`,
      async () => {
        const stats = await runTarget({
          suite: 'frames',
          file: 'test/fuzz/frames.fuzz.test.ts',
          target: target.name,
          arbitrary: target.arbitrary,
          count: CASES,
          // One case at a time per connection, so each answer is read against the frame that caused it.
          concurrency: 1,
          execute: (c) => driver.run(c),
          describe: describeFrameCase,
          checkpoint: async () => {
            driver.recycle();
            const health = await app.http.inject({ method: 'GET', url: '/healthz' });
            return health.statusCode === 200 ? undefined : `/healthz answered ${health.statusCode}`;
          },
        });
        all.push(stats);
        expect(stats.failures.map((f) => `#${f.index} ${f.message}\n      ${f.reproduction}`)).toEqual([]);
        expect(overBound(startMemory, stats.memoryAfter)).toBeUndefined();
      },
      Math.max(60_000, CASES * 100),
    );
  }
});
