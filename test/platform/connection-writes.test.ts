import { setImmediate as afterIo } from 'node:timers/promises';
import { encode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { CloseCode } from '../../protocol/frames.js';
import { fakeConnection } from '../helpers/fake-connection.js';

const frame = (n: number) => encode({ t: 'said', d: { n } });
const said = (sent: Record<string, unknown>[]) => sent.map((f) => (f.d as { n: number }).n);

/** How a connection writes fan-out frames: together once per event-loop turn, never out of order. */
describe('Connection writes', () => {
  it("writes the fan-out frames queued in one turn together, once that turn's I/O has run", async () => {
    const client = fakeConnection();
    client.connection.queue(frame(1));
    client.connection.queue(frame(2));
    expect(client.sent).toEqual([]);
    await afterIo();
    expect(said(client.sent)).toEqual([1, 2]);
    expect(client.corks).toBe(1);
  });

  it('sends a direct frame after the frames queued before it', () => {
    const client = fakeConnection();
    client.connection.queue(frame(1));
    client.connection.sendEncoded(frame(2));
    client.connection.queue(frame(3));
    client.connection.sendPaced(frame(4));
    expect(said(client.sent)).toEqual([1, 2, 3, 4]);
  });

  it('writes the queued frames before it closes, and drops those queued after', async () => {
    const client = fakeConnection();
    client.connection.queue(frame(1));
    client.connection.close(1001, 'shutting down');
    client.connection.queue(frame(2));
    await afterIo();
    expect(said(client.sent)).toEqual([1]);
    expect(client.closedWith).toEqual({ code: 1001, reason: 'shutting down' });
  });

  it('closes a client that stops reading as a slow consumer while writing its queued frames, and writes no more', async () => {
    const client = fakeConnection(8, 1);
    for (const n of [1, 2, 3]) client.connection.queue(frame(n));
    await afterIo();
    expect(said(client.sent)).toEqual([1, 2]);
    expect(client.closedWith?.code).toBe(CloseCode.SLOW_CONSUMER);
  });
});
