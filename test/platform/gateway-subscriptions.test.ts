import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { userPrincipal } from '../../src/platform/auth/principal.js';
import { EventBus, userTopic } from '../../src/platform/bus.js';
import { Subscriptions } from '../../src/platform/gateway/subscriptions.js';
import { MemoryKv } from '../../src/platform/kv/index.js';
import { createLogger } from '../../src/platform/log.js';
import { fakeConnection } from '../helpers/fake-connection.js';

const LIMIT = 2;
const ROOM = 'room:r1';

/** Topics, user events and replay on their own: the in-process bus, no socket. */
describe('Subscriptions', () => {
  let kv: MemoryKv;
  let bus: EventBus;
  let subscriptions: Subscriptions;

  beforeEach(() => {
    kv = new MemoryKv();
    bus = new EventBus(kv, { maxLen: 100, ttlMs: 60_000 });
    bus.recordTopics('room:');
    subscriptions = new Subscriptions({
      bus,
      log: createLogger({ LOG_LEVEL: 'silent' }),
      maxSubscriptions: LIMIT,
      maxBufferedBytes: 1024 * 1024,
    });
  });

  afterEach(async () => {
    await kv.close();
  });

  const said = (sent: Record<string, unknown>[]) => sent.map((frame) => (frame.d as { n: number }).n);

  it("refuses subscriptions over the limit all or none, the user's own topic not counted", async () => {
    const client = fakeConnection();
    client.connection.principal = userPrincipal({ id: 'u1', sessionId: 's1', roles: [] });
    await subscriptions.joinOwnTopic(client.connection, 'u1');
    await subscriptions.subscribe(client.connection, [{ topic: 'a' }]);
    await expect(
      subscriptions.subscribe(client.connection, [{ topic: 'b' }, { topic: 'c' }]),
    ).rejects.toMatchObject({
      code: 'SUBSCRIPTION_LIMIT',
    });
    expect([...(client.connection.topics ?? [])]).toEqual([userTopic('u1'), 'a']);
    await subscriptions.subscribe(client.connection, [{ topic: 'a' }, { topic: 'b' }]);
    expect(client.connection.topics?.size).toBe(LIMIT + 1);
  });

  it('replays the events missed since a position, then the live ones, each once and in order', async () => {
    const since = await bus.positionOf(ROOM);
    await bus.publish(ROOM, { t: 'said', d: { n: 1 } });
    await bus.publish(ROOM, { t: 'said', d: { n: 2 } });
    const client = fakeConnection();
    const joining = subscriptions.subscribeRecovering(client.connection, { topic: ROOM }, since);
    await bus.publish(ROOM, { t: 'said', d: { n: 3 } });
    const caughtUp = await joining;
    await bus.publish(ROOM, { t: 'said', d: { n: 4 } });
    await vi.waitFor(() => expect(client.sent).toHaveLength(4));
    expect(said(client.sent)).toEqual([1, 2, 3, 4]);
    expect(client.sent[0]).toMatchObject({ pos: { offset: since.offset + 1, stream: ROOM } });
    expect(caughtUp.recovered).toBe(true);
    expect(client.connection.held).toBeUndefined();
  });

  it('says a position it cannot replay from was not recovered, and sends only the live events', async () => {
    await bus.publish(ROOM, { t: 'said', d: { n: 1 } });
    const client = fakeConnection();
    const caughtUp = await subscriptions.subscribeRecovering(
      client.connection,
      { topic: ROOM },
      { offset: 0, epoch: 'gone' },
    );
    expect(caughtUp).toMatchObject({ recovered: false, position: { offset: 1 } });
    await bus.publish(ROOM, { t: 'said', d: { n: 2 } });
    await vi.waitFor(() => expect(client.sent).toHaveLength(1));
    expect(said(client.sent)).toEqual([2]);
  });

  it("handles a user event on the node for the user's own sockets instead of sending it", async () => {
    const handled: string[] = [];
    subscriptions.onUserEvent('blocked', (connection, event) =>
      handled.push(`${connection.principal?.kind} ${(event.d as { n: number }).n}`),
    );
    const client = fakeConnection();
    client.connection.principal = userPrincipal({ id: 'u1', sessionId: 's1', roles: [] });
    await subscriptions.joinOwnTopic(client.connection, 'u1');
    await subscriptions.catchUpOwnTopic(client.connection, 'u1');
    await bus.publish(userTopic('u1'), { t: 'blocked', d: { n: 1 } });
    await bus.publish(userTopic('u1'), { t: 'said', d: { n: 2 } });
    await vi.waitFor(() => expect(client.sent).toHaveLength(1));
    expect(handled).toEqual(['user 1']);
    expect(said(client.sent)).toEqual([2]);
  });
});
