import { afterEach, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster, useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { authedSocket, openedSockets, type TestSocket } from '../helpers/ws-client.js';
import { dmCalls } from './dm.js';

type ReadEvent = { conversation_id: string; user_id: string; last_read_at: string };

/**
 * Read marks (`dm.read`): told only when a read moves the mark, never across a block, coalesced to
 * one per conversation and second with the latest winning, and kept out of the recovery history.
 * "Nothing else arrived" is checked with a sentinel: a direct message from a third user published
 * after the reads, which reaches the socket after any event the reads published.
 */
describe('read marks', () => {
  const app = useTestApp();
  const sockets = openedSockets(() => app().wsUrl);
  const { expectStatus, sent } = dmCalls(app);
  afterEach(() => sockets.closeAll());

  const readHistory = (reader: TokenResponse, peer: TokenResponse) =>
    expectStatus(200, 'GET', `/api/chat/dm/${peer.user.id}/messages?limit=5`, reader);

  /** The dm.read frames the socket holds once a message from `sentinel` arrived after them. */
  async function readEventsBefore(socket: TestSocket, sentinel: TokenResponse, to: TokenResponse) {
    const { id } = await sent(sentinel, to, 'sentinel');
    await socket.next((f) => f.t === 'dm.message' && (f.d as { id: string }).id === id);
    return socket.frames.filter((f) => f.t === 'dm.read');
  }

  const readMarkOf = async (reader: TokenResponse) =>
    (
      await queryRows<{ at: string; version: string }>(
        app().db,
        `select to_char(last_read_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at, xmin::text as version
         from conversation_participants where user_id = ?`,
        [reader.user.id],
      )
    )[0];

  it('tells the peer once when a read moves the mark; reads that move nothing write and tell nothing', async () => {
    const [alice, bob, carol] = await Promise.all([
      registerUser(app()),
      registerUser(app()),
      registerUser(app()),
    ]);
    await sent(alice, bob, 'read me');
    const aliceSocket = await sockets.open(alice.access_token);
    await readHistory(bob, alice);
    const moved = await readMarkOf(bob);
    for (let i = 0; i < 20; i++) await readHistory(bob, alice);
    // The same row version: the twenty reads wrote nothing.
    expect(await readMarkOf(bob)).toEqual(moved);
    const told = await readEventsBefore(aliceSocket, carol, alice);
    expect(told.map((f) => f.d)).toEqual([
      { conversation_id: expect.any(String), user_id: bob.user.id, last_read_at: moved?.at },
    ]);
  });

  it('never tells a read across a block, though the mark moves', async () => {
    const [alice, bob, carol] = await Promise.all([
      registerUser(app()),
      registerUser(app()),
      registerUser(app()),
    ]);
    await sent(alice, bob, 'before the block');
    await expectStatus(204, 'PUT', `/api/blocks/${bob.user.id}`, alice);
    const aliceSocket = await sockets.open(alice.access_token);
    await readHistory(bob, alice);
    expect((await readMarkOf(bob))?.at).not.toBeNull();
    expect(await readEventsBefore(aliceSocket, carol, alice)).toEqual([]);
  });

  it('tells the first mark of a second at once and, of the ones after it, only the latest', async () => {
    const [alice, bob, carol] = await Promise.all([
      registerUser(app()),
      registerUser(app()),
      registerUser(app()),
    ]);
    const aliceSocket = await sockets.open(alice.access_token);
    const marks: (string | undefined)[] = [];
    for (const body of ['one', 'two', 'three']) {
      await sent(alice, bob, body);
      await readHistory(bob, alice);
      marks.push((await readMarkOf(bob))?.at);
    }
    expect(new Set(marks).size).toBe(3);
    const first = await aliceSocket.next((f) => f.t === 'dm.read');
    expect((first.d as ReadEvent).last_read_at).toBe(marks[0]);
    // The window closes after a second: then the latest waiting mark goes out, the middle one never.
    const latest = await aliceSocket.next((f) => f.t === 'dm.read', 5000);
    expect((latest.d as ReadEvent).last_read_at).toBe(marks[2]);
    expect(await readEventsBefore(aliceSocket, carol, alice)).toEqual([]);
  });

  it("keeps each side's newest-message time, which decides whether a read moves the mark, through batched sends too", async () => {
    const [alice, bob] = await Promise.all([registerUser(app()), registerUser(app())]);
    await sent(alice, bob, 'first');
    // Sends made while others are being stored share statements (insertMessages).
    await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => sent(alice, bob, `a${i}`)),
      ...Array.from({ length: 8 }, (_, i) => sent(bob, alice, `b${i}`)),
    ]);
    const [row] = await queryRows<{ a_ok: boolean; b_ok: boolean }>(
      app().db,
      `select c.last_message_a_at = (select max(created_at) from messages m where m.conversation_id = c.id and m.sender_id = c.user_a_id) as a_ok,
              c.last_message_b_at = (select max(created_at) from messages m where m.conversation_id = c.id and m.sender_id = c.user_b_id) as b_ok
       from conversations c where ? in (c.user_a_id, c.user_b_id)`,
      [alice.user.id],
    );
    expect(row).toEqual({ a_ok: true, b_ok: true });
  });

  it('sends read marks without a stream position: they take no place in the recovery history', async () => {
    const [alice, bob, carol] = await Promise.all([
      registerUser(app()),
      registerUser(app()),
      registerUser(app()),
    ]);
    const aliceSocket = await sockets.open(alice.access_token);
    const positionOf = async (from: TokenResponse) => {
      const { id } = await sent(from, alice, 'positioned');
      const frame = await aliceSocket.next((f) => f.t === 'dm.message' && (f.d as { id: string }).id === id);
      return (frame.pos as { offset: number }).offset;
    };
    const before = await positionOf(carol);
    await sent(alice, bob, 'read me');
    await aliceSocket.next((f) => f.t === 'dm.message');
    await readHistory(bob, alice);
    const read = await aliceSocket.next((f) => f.t === 'dm.read');
    expect(read).not.toHaveProperty('pos');
    // Alice's own message took one place; the read mark none.
    expect(await positionOf(carol)).toBe(before + 2);
  });
});

describe('read marks on two nodes', () => {
  let cluster: TestCluster;
  afterEach(async () => cluster?.close());

  it('share one window: reads on both nodes within a second tell the first at once and then only the latest', async () => {
    cluster = await buildTestCluster(2);
    const [one, two] = cluster.nodes as [TestCluster['nodes'][0], TestCluster['nodes'][0]];
    const [alice, bob] = [await registerUser(one), await registerUser(one)];
    const aliceSocket = await authedSocket(one.wsUrl, alice.access_token);
    try {
      const marks: string[] = [];
      for (const node of [one, two, one]) {
        const sent = await node.http.inject({
          method: 'POST',
          url: `/api/chat/dm/${bob.user.id}/messages`,
          headers: { authorization: `Bearer ${alice.access_token}` },
          payload: { body: 'hi' },
        });
        expect(sent.statusCode).toBe(201);
        const read = await node.http.inject({
          method: 'GET',
          url: `/api/chat/dm/${alice.user.id}/messages`,
          headers: { authorization: `Bearer ${bob.access_token}` },
        });
        expect(read.statusCode).toBe(200);
        const [row] = await queryRows<{ at: string }>(
          one.db,
          `select to_char(last_read_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
           from conversation_participants where user_id = ?`,
          [bob.user.id],
        );
        marks.push(row?.at as string);
      }
      const told: string[] = [];
      for (;;) {
        const frame = await aliceSocket.next((f) => f.t === 'dm.read', 5000);
        told.push((frame.d as ReadEvent).last_read_at);
        if (told.at(-1) === marks[2]) break;
      }
      // The node that read second held an older mark than the one told: it stays quiet.
      expect(told).toEqual([marks[0], marks[2]]);
    } finally {
      aliceSocket.close();
    }
  });
});
