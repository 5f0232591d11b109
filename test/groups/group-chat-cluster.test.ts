import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Group } from '../../protocol/groups.js';
import { callsAs, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestCluster } from '../helpers/app.js';
import { authedSocket, type ReceivedFrame, request, type TestSocket } from '../helpers/ws-client.js';
import { uniqueGroupName } from './groups.js';

type Node = TestCluster['nodes'][0];

const isMessage = (body: string) => (f: ReceivedFrame) =>
  f.t === 'chat.message' && (f.d as { body: string }).body === body;

describe('group chat across two instances', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await buildTestCluster(2, { DM_RATE_LIMIT_COUNT: 1000 });
  });
  afterAll(async () => {
    await cluster?.close();
  });
  const opened: TestSocket[] = [];
  afterEach(() => {
    for (const socket of opened.splice(0)) socket.close();
  });
  const nodes = () => cluster.nodes as [Node, Node];
  /** REST calls through one instance. */
  const through = (node: Node) => callsAs(() => node).expectStatus;

  /** A socket on `node` of `user` that joined the group's chat. */
  const listeningOn = async (node: Node, user: TokenResponse, groupId: string) => {
    const socket = await authedSocket(node.wsUrl, user.access_token);
    opened.push(socket);
    expect(await request(socket, 'chat.join', { group_id: groupId })).toMatchObject({
      t: 'ack',
      d: { group_id: groupId },
    });
    return socket;
  };

  it("stops a member's socket on instance B from hearing the group's chat once they are kicked through instance A, while another member's socket there still does", async () => {
    const [a, b] = nodes();
    const [owner, kicked, stayer] = [await registerUser(a), await registerUser(a), await registerUser(b)];
    const group: Group = (
      await through(a)(201, 'POST', '/api/groups', owner, { name: uniqueGroupName() })
    ).json();
    for (const member of [kicked, stayer])
      await through(b)(201, 'POST', `/api/groups/${group.id}/members`, member);
    const [kickedSocket, stayerSocket] = [
      await listeningOn(b, kicked, group.id),
      await listeningOn(b, stayer, group.id),
    ];
    await through(a)(201, 'POST', `/api/groups/${group.id}/messages`, owner, { body: 'before the kick' });
    await kickedSocket.next(isMessage('before the kick'));
    await stayerSocket.next(isMessage('before the kick'));

    await through(a)(204, 'DELETE', `/api/groups/${group.id}/members/${kicked.user.id}`, owner);
    const kick = { group_id: group.id, user_id: kicked.user.id, by: owner.user.id };
    expect((await kickedSocket.next((f) => f.t === 'group.member_kicked')).d).toEqual(kick);
    expect((await stayerSocket.next((f) => f.t === 'group.member_kicked')).d).toEqual(kick);

    await through(a)(201, 'POST', `/api/groups/${group.id}/messages`, owner, { body: 'after the kick' });
    expect((await stayerSocket.next(isMessage('after the kick'))).d).toMatchObject({ group_id: group.id });
    // A direct message published after the group's: it reaches the kicked socket after where the
    // group message would have.
    await through(a)(201, 'POST', `/api/chat/dm/${kicked.user.id}/messages`, owner, { body: 'marker' });
    await kickedSocket.next((f) => f.t === 'dm.message');
    expect(
      kickedSocket.frames.filter((f) => f.t === 'chat.message' || f.t === 'group.member_kicked'),
    ).toEqual([]);

    // Nor can it write or join again through either instance.
    for (const node of [a, b]) {
      const write = await node.http.inject({
        method: 'POST',
        url: `/api/groups/${group.id}/messages`,
        headers: { authorization: `Bearer ${kicked.access_token}` },
        payload: { body: 'still here?' },
      });
      expect([write.statusCode, write.json().code]).toEqual([403, 'FORBIDDEN']);
    }
    expect(await request(kickedSocket, 'chat.join', { group_id: group.id })).toMatchObject({
      t: 'error',
      code: 'FORBIDDEN',
    });
  });

  it('delivers a message sent on instance A to a joined socket on instance B, and one sent over the frame on B to a joined socket on A', async () => {
    const [a, b] = nodes();
    const [owner, member] = [await registerUser(a), await registerUser(b)];
    const group: Group = (
      await through(a)(201, 'POST', '/api/groups', owner, { name: uniqueGroupName() })
    ).json();
    await through(b)(201, 'POST', `/api/groups/${group.id}/members`, member);
    const [onA, onB] = [await listeningOn(a, owner, group.id), await listeningOn(b, member, group.id)];
    const sent = (
      await through(a)(201, 'POST', `/api/groups/${group.id}/messages`, owner, { body: 'from A' })
    ).json();
    expect((await onB.next(isMessage('from A'))).d).toEqual(sent);
    const ack = await request(onB, 'chat.sendToGroup', { group_id: group.id, body: 'from B' });
    expect((await onA.next(isMessage('from B'))).d).toEqual(ack.d);
  });
});
