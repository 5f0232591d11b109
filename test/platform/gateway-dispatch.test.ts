import { encode } from '@msgpack/msgpack';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { CloseCode } from '../../protocol/frames.js';
import { servicePrincipal, userPrincipal } from '../../src/platform/auth/principal.js';
import { AppError, ErrorCode } from '../../src/platform/errors.js';
import { FrameDispatcher, NO_ACK } from '../../src/platform/gateway/dispatch.js';
import { InFlight } from '../../src/platform/in-flight.js';
import { createLogger } from '../../src/platform/log.js';
import { createMetrics } from '../../src/platform/metrics.js';
import { type FakeConnection, fakeConnection } from '../helpers/fake-connection.js';

const ALLOWANCE = 4;
const SETUP_CONCURRENCY = 2;
const AUTH_CONCURRENCY = 3;
const SETUP_QUEUE = 2;
const user = userPrincipal({ id: 'u1', sessionId: 's1', roles: [] });
const server = servicePrincipal({ id: 'gs1', scope: 'w1' });

/** The dispatcher on its own: frames in, acks and error frames out, no socket or app. */
describe('FrameDispatcher', () => {
  let frames: FrameDispatcher;
  let inFlight: InFlight;
  let client: FakeConnection;

  const receive = (frame: unknown, from = client) => {
    const bytes = encode(frame);
    frames.receive(
      from.connection,
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
      true,
    );
  };
  const lastSent = () => client.sent.at(-1);

  beforeEach(() => {
    inFlight = new InFlight();
    frames = new FrameDispatcher({
      log: createLogger({ LOG_LEVEL: 'silent' }),
      metrics: createMetrics(),
      inFlight,
      maxFrameBytes: 1024,
      maxFramesPerSecond: ALLOWANCE,
      setupConcurrency: { auth: AUTH_CONCURRENCY, database: SETUP_CONCURRENCY },
      maxSetupWaiting: SETUP_QUEUE,
    });
    client = fakeConnection();
    frames.handle('echo', z.object({ n: z.number() }), (_connection, { n }) => ({ n }));
    frames.handle('open', z.undefined(), () => 'open', { admits: 'anyone' });
    frames.handle('servers', z.undefined(), () => 'servers', { admits: ['user', 'service'] });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('refuses a frame from a connection that has not authenticated, unless the frame admits anyone', () => {
    receive({ t: 'echo', id: 1, d: { n: 1 } });
    expect(lastSent()).toMatchObject({ t: 'error', id: 1, code: 'UNAUTHENTICATED' });
    receive({ t: 'open', id: 2 });
    expect(lastSent()).toEqual({ t: 'ack', id: 2, d: 'open' });
  });

  it("admits a service's connection only to the frames that admit services, and forbids it the others", () => {
    client.connection.principal = server;
    receive({ t: 'echo', id: 1, d: { n: 1 } });
    expect(lastSent()).toMatchObject({ t: 'error', id: 1, code: 'FORBIDDEN' });
    receive({ t: 'servers', id: 2 });
    expect(lastSent()).toEqual({ t: 'ack', id: 2, d: 'servers' });
    client.connection.principal = user;
    receive({ t: 'echo', id: 3, d: { n: 3 } });
    expect(lastSent()).toEqual({ t: 'ack', id: 3, d: { n: 3 } });
  });

  it('acks only frames with an id, and never a handler that answers with its own frame', () => {
    frames.handle('self', z.undefined(), (connection) => {
      connection.send({ t: 'own' });
      return NO_ACK;
    });
    client.connection.principal = user;
    receive({ t: 'echo', d: { n: 1 } });
    receive({ t: 'self', id: 2 });
    expect(client.sent).toEqual([{ t: 'own' }]);
  });

  it('answers an unknown type with UNKNOWN_FRAME_TYPE and an invalid payload with VALIDATION_FAILED under d', () => {
    client.connection.principal = user;
    receive({ t: 'teleport', id: 1 });
    expect(lastSent()).toMatchObject({ code: 'UNKNOWN_FRAME_TYPE', id: 1 });
    receive({ t: 'echo', id: 2, d: { n: 'one' } });
    expect(lastSent()).toMatchObject({ code: 'VALIDATION_FAILED', id: 2, errors: [{ path: 'd.n' }] });
  });

  it("answers a handler's AppError with its code and anything else it throws with INTERNAL", async () => {
    frames.handle('refuse', z.undefined(), () => {
      throw new AppError(ErrorCode.NOT_FOUND, 'No such thing.');
    });
    frames.handle('crash', z.undefined(), async () => {
      throw new Error('bug');
    });
    client.connection.principal = user;
    receive({ t: 'refuse', id: 1 });
    expect(lastSent()).toMatchObject({ t: 'error', id: 1, code: 'NOT_FOUND', message: 'No such thing.' });
    receive({ t: 'crash', id: 2 });
    await inFlight.idle(10_000);
    await vi.waitFor(() => expect(lastSent()).toMatchObject({ t: 'error', id: 2, code: 'INTERNAL' }));
  });

  it('counts an asynchronous handler as in flight until it has answered', async () => {
    let finish: (value: string) => void = () => {};
    frames.handle('slow', z.undefined(), () => new Promise<string>((resolve) => (finish = resolve)));
    client.connection.principal = user;
    receive({ t: 'slow', id: 1 });
    let idle = false;
    const waiting = inFlight.idle(10_000).then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    finish('done');
    await waiting;
    await vi.waitFor(() => expect(lastSent()).toEqual({ t: 'ack', id: 1, d: 'done' }));
  });

  it('writes the answers that one event-loop turn settles for a socket in one corked write, in frame order', async () => {
    let settle: () => void = () => {};
    const settled = new Promise<void>((resolve) => (settle = resolve));
    frames.handle('later', z.object({ n: z.number() }), async (_connection, { n }) => {
      await settled;
      if (n === 2) throw new AppError(ErrorCode.NOT_FOUND, 'No such thing.');
      return n;
    });
    client.connection.principal = user;
    for (const n of [1, 2, 3]) receive({ t: 'later', id: n, d: { n } });
    const corksBefore = client.corks;
    settle();
    await vi.waitFor(() => expect(client.sent).toHaveLength(3));
    expect(client.sent).toEqual([
      { t: 'ack', id: 1, d: 1 },
      expect.objectContaining({ t: 'error', id: 2, code: 'NOT_FOUND' }),
      { t: 'ack', id: 3, d: 3 },
    ]);
    expect(client.corks - corksBefore).toBe(1);
  });

  it('drops frames over the allowance with RATE_LIMITED and closes a flood at three times it with 4429', () => {
    vi.useFakeTimers({ now: Date.parse('2026-11-21T12:00:00.000Z') });
    for (let i = 0; i < ALLOWANCE; i++) receive({ t: 'open' });
    receive({ t: 'open' });
    expect(lastSent()).toMatchObject({ t: 'error', code: 'RATE_LIMITED' });
    const errors = client.sent.length;
    receive({ t: 'open' });
    expect(client.sent).toHaveLength(errors);
    receive({ t: 'open', id: 9 });
    expect(lastSent()).toMatchObject({ t: 'error', id: 9, code: 'RATE_LIMITED' });
    for (let count = ALLOWANCE + 4; count <= ALLOWANCE * 3; count++) receive({ t: 'open' });
    expect(client.closedWith).toBeUndefined();
    receive({ t: 'open' });
    expect(client.closedWith?.code).toBe(CloseCode.FLOOD);
  });

  describe('setup frames (auth, joins, subscriptions)', () => {
    /** Each started setup frame's type and number, and how to finish it, in the order they started. */
    let started: { t: string; n: number; finish: () => void }[];
    const clients = (count = 5) =>
      Array.from({ length: count }, () => {
        const other = fakeConnection();
        other.connection.principal = user;
        return other;
      });
    const startedOf = (t: string) => started.filter((s) => s.t === t).map((s) => s.n);

    beforeEach(() => {
      started = [];
      for (const [t, gate] of [
        ['setup', 'database'],
        ['login', 'auth'],
      ] as const) {
        frames.handle(
          t,
          z.object({ n: z.number() }),
          (_connection, { n }) =>
            new Promise<number>((resolve) => started.push({ t, n, finish: () => resolve(n) })),
          { setup: gate, admits: 'anyone' },
        );
      }
    });

    it('run a bounded number at once and the rest in arrival order, while other frames run at once', async () => {
      const senders = clients();
      senders.forEach((sender, i) => {
        if (i < SETUP_CONCURRENCY + SETUP_QUEUE) receive({ t: 'setup', id: 1, d: { n: i } }, sender);
      });
      expect(started.map((s) => s.n)).toEqual([0, 1]);
      client.connection.principal = user;
      receive({ t: 'echo', id: 7, d: { n: 7 } });
      expect(lastSent()).toEqual({ t: 'ack', id: 7, d: { n: 7 } });

      // The queue is full: one more is refused at once, and its client told to retry.
      const refused = senders[4] as FakeConnection;
      receive({ t: 'setup', id: 1, d: { n: 4 } }, refused);
      await vi.waitFor(() => expect(refused.sent).toHaveLength(1));
      expect(refused.sent[0]).toMatchObject({ t: 'error', id: 1, code: 'SERVICE_UNAVAILABLE' });

      started[1]?.finish();
      await vi.waitFor(() => expect(started.map((s) => s.n)).toEqual([0, 1, 2]));
      started[0]?.finish();
      await vi.waitFor(() => expect(started.map((s) => s.n)).toEqual([0, 1, 2, 3]));
      for (const s of started.slice(2)) s.finish();
      await inFlight.idle(10_000);
      await vi.waitFor(() =>
        senders.slice(0, 4).forEach((sender, i) => {
          expect(sender.sent).toEqual([{ t: 'ack', id: 1, d: i }]);
        }),
      );
      expect(started.map((s) => s.n)).toEqual([0, 1, 2, 3]);
    });

    it('run auth-gate frames at their own, wider gate: they never wait behind database-gate frames', async () => {
      const senders = clients(SETUP_CONCURRENCY + 1 + AUTH_CONCURRENCY);
      const joiners = senders.slice(0, SETUP_CONCURRENCY + 1);
      const authenticating = senders.slice(SETUP_CONCURRENCY + 1);
      for (const [n, sender] of joiners.entries()) receive({ t: 'setup', id: 1, d: { n } }, sender);
      for (const [n, sender] of authenticating.entries()) receive({ t: 'login', id: 1, d: { n } }, sender);
      // The database gate is full and one frame waits there; the auth gate runs its own at once.
      expect(startedOf('setup')).toEqual([0, 1]);
      expect(startedOf('login')).toEqual([0, 1, 2]);

      for (const s of started.filter((s) => s.t === 'login')) s.finish();
      await vi.waitFor(() =>
        expect(authenticating.map((sender) => sender.sent.length)).toEqual(Array(AUTH_CONCURRENCY).fill(1)),
      );
      for (const [n, sender] of authenticating.entries())
        expect(sender.sent).toEqual([{ t: 'ack', id: 1, d: n }]);
      // Finishing auth frames gave no database-gate frame a turn.
      expect(startedOf('setup')).toEqual([0, 1]);
      for (const s of started.filter((s) => s.t === 'setup')) s.finish();
      await vi.waitFor(() => expect(startedOf('setup')).toEqual([0, 1, 2]));
      for (const s of started.filter((s) => s.t === 'setup')) s.finish();
      await inFlight.idle(10_000);
    });

    it('count the frames waiting at both gates against one queue bound, refusing one more at either', async () => {
      const senders = clients(SETUP_CONCURRENCY + AUTH_CONCURRENCY + SETUP_QUEUE + 3);
      let next = 0;
      const send = (t: string) => {
        const n = next++;
        receive({ t, id: 1, d: { n } }, senders[n] as FakeConnection);
        return { n, sender: senders[n] as FakeConnection };
      };
      for (let i = 0; i < SETUP_CONCURRENCY; i++) send('setup');
      for (let i = 0; i < AUTH_CONCURRENCY; i++) send('login');
      const waitingJoin = send('setup');
      const waitingAuth = send('login');
      for (const refused of [send('setup'), send('login')]) {
        await vi.waitFor(() => expect(refused.sender.sent).toHaveLength(1));
        expect(refused.sender.sent[0]).toMatchObject({ t: 'error', id: 1, code: 'SERVICE_UNAVAILABLE' });
      }

      // A waiting frame that starts frees its place in the queue, whichever gate it waited at.
      started.find((s) => s.t === 'login')?.finish();
      await vi.waitFor(() => expect(startedOf('login')).toContain(waitingAuth.n));
      const admitted = send('setup');
      for (const s of started) s.finish();
      await vi.waitFor(() => expect(startedOf('setup')).toContain(admitted.n));
      for (const s of started) s.finish();
      await inFlight.idle(10_000);
      await vi.waitFor(() => {
        for (const { n, sender } of [waitingJoin, waitingAuth, admitted])
          expect(sender.sent).toEqual([{ t: 'ack', id: 1, d: n }]);
      });
    });

    it('skip a waiting frame whose connection closed meanwhile', async () => {
      const [first, second, third, gone] = clients() as [
        FakeConnection,
        FakeConnection,
        FakeConnection,
        FakeConnection,
      ];
      receive({ t: 'setup', id: 1, d: { n: 1 } }, first);
      receive({ t: 'setup', id: 1, d: { n: 2 } }, second);
      receive({ t: 'setup', id: 1, d: { n: 3 } }, gone);
      receive({ t: 'setup', id: 1, d: { n: 4 } }, third);
      gone.connection.close(CloseCode.GOING_AWAY, 'the client went away');
      started[0]?.finish();
      started[1]?.finish();
      await vi.waitFor(() => expect(started.map((s) => s.n)).toEqual([1, 2, 4]));
      started[2]?.finish();
      await inFlight.idle(10_000);
      await vi.waitFor(() => expect(third.sent).toEqual([{ t: 'ack', id: 1, d: 4 }]));
      expect(gone.sent).toEqual([]);
    });
  });
});
