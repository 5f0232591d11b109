import { afterEach, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { GroupMessage } from '../../protocol/groups.js';
import { PASSWORD, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, type ReceivedFrame, request, type TestSocket } from '../helpers/ws-client.js';
import { groupCalls } from './groups.js';

interface Position {
  offset: number;
  epoch: string;
}

const isMessage = (body: string) => (f: ReceivedFrame) =>
  f.t === 'chat.message' && (f.d as { body: string }).body === body;
const ofType = (t: string) => (f: ReceivedFrame) => f.t === t;
/** The frames of type `t` the socket received and no `next` took yet. */
const left = (socket: TestSocket, t: string) => socket.frames.filter(ofType(t));

describe('group events over the socket', () => {
  const app = useTestApp({ DM_RATE_LIMIT_COUNT: 1000, EVENT_HISTORY_SIZE: 50 });
  const { expectStatus, createGroup, joined, requested, cast } = groupCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  afterEach(() => sockets.closeAll());
  const user = () => registerUser(app());

  const sent = async (from: TokenResponse, groupId: string, body: string): Promise<GroupMessage> =>
    (await expectStatus(201, 'POST', `/api/groups/${groupId}/messages`, from, { body })).json();
  const kick = (by: TokenResponse, groupId: string, userId: string) =>
    expectStatus(204, 'DELETE', `/api/groups/${groupId}/members/${userId}`, by);
  /** A direct message: an event on the user's own topic, published after everything sent before it. */
  const dm = (from: TokenResponse, to: TokenResponse, body: string) =>
    expectStatus(201, 'POST', `/api/chat/dm/${to.user.id}/messages`, from, { body });
  const isDm = (body: string) => (f: ReceivedFrame) =>
    f.t === 'dm.message' && (f.d as { body: string }).body === body;

  /** A socket of `user` that joined the group's chat. */
  const listening = async (member: TokenResponse, groupId: string) => {
    const socket = await sockets.open(member.access_token);
    expect(await request(socket, 'chat.join', { group_id: groupId })).toMatchObject({
      t: 'ack',
      d: { group_id: groupId },
    });
    return socket;
  };

  /** An open group of a new owner with one more member. */
  const groupWithMember = async () => {
    const [owner, member] = [await user(), await user()];
    const group = await createGroup(owner);
    await joined(member, group.id);
    return { group, owner, member };
  };

  it('acks chat.join with the group and its stream position, and delivers chat.message to the joined socket', async () => {
    const { group, owner, member } = await groupWithMember();
    const socket = await sockets.open(member.access_token);
    const ack = await request(socket, 'chat.join', { group_id: group.id.toUpperCase() });
    expect(ack).toEqual({
      t: 'ack',
      id: expect.any(Number),
      d: { group_id: group.id, position: { offset: expect.any(Number), epoch: expect.any(String) } },
    });
    const message = await sent(owner, group.id, 'over REST');
    const heard = await socket.next(isMessage('over REST'));
    expect(heard.d).toEqual(message);
    const { position } = ack.d as { position: Position };
    expect(heard.pos).toEqual({ ...position, offset: position.offset + 1, stream: `group:${group.id}` });
    const frame = await request(socket, 'chat.sendToGroup', { group_id: group.id, body: 'over the socket' });
    expect((await socket.next(isMessage('over the socket'))).d).toEqual(frame.d);
  });

  it("keeps groups' chats apart: a socket hears only the groups it joined", async () => {
    const { group, owner } = await groupWithMember();
    const other = await createGroup(owner);
    const socket = await listening(owner, group.id);
    await sent(owner, other.id, 'elsewhere');
    await sent(owner, group.id, 'here');
    await socket.next(isMessage('here'));
    expect(left(socket, 'chat.message')).toEqual([]);
  });

  it("sends group.member_joined to the joined sockets and the joiner's own socket: by null for an open join, the approver for an approval", async () => {
    const { group, owner } = await groupWithMember();
    const ownerSocket = await listening(owner, group.id);
    const newcomer = await user();
    const newcomerSocket = await sockets.open(newcomer.access_token);
    const member = await joined(newcomer, group.id);
    const openJoin = { group_id: group.id, member, by: null };
    expect(member).toMatchObject({ user_id: newcomer.user.id, role: 'member' });
    expect((await ownerSocket.next(ofType('group.member_joined'))).d).toEqual(openJoin);
    expect((await newcomerSocket.next(ofType('group.member_joined'))).d).toEqual(openJoin);

    await expectStatus(200, 'PATCH', `/api/groups/${group.id}`, owner, { join_policy: 'closed' });
    const asking = await user();
    const askingSocket = await sockets.open(asking.access_token);
    await requested(asking, group.id);
    const approved = (
      await expectStatus(201, 'POST', `/api/groups/${group.id}/requests/${asking.user.id}/approve`, owner)
    ).json();
    const approval = { group_id: group.id, member: approved, by: owner.user.id };
    expect((await ownerSocket.next(ofType('group.member_joined'))).d).toEqual(approval);
    expect((await askingSocket.next(ofType('group.member_joined'))).d).toEqual(approval);
  });

  it("sends group.member_left (by null) and group.member_kicked (by the remover) to the joined sockets and the affected user's own socket", async () => {
    const { group, owner, member } = await groupWithMember();
    const leaver = await user();
    await joined(leaver, group.id);
    const ownerSocket = await listening(owner, group.id);
    const [leaverSocket, memberSocket] = [
      await sockets.open(leaver.access_token),
      await sockets.open(member.access_token),
    ];
    await kick(leaver, group.id, leaver.user.id);
    const leftEvent = { group_id: group.id, user_id: leaver.user.id, by: null };
    expect((await ownerSocket.next(ofType('group.member_left'))).d).toEqual(leftEvent);
    expect((await leaverSocket.next(ofType('group.member_left'))).d).toEqual(leftEvent);
    await kick(owner, group.id, member.user.id);
    const kicked = { group_id: group.id, user_id: member.user.id, by: owner.user.id };
    expect((await ownerSocket.next(ofType('group.member_kicked'))).d).toEqual(kicked);
    expect((await memberSocket.next(ofType('group.member_kicked'))).d).toEqual(kicked);
    expect(left(leaverSocket, 'group.member_kicked')).toEqual([]);
  });

  it("sends group.role_changed with the changer to the joined sockets and the member's own socket, and nothing for a role unchanged", async () => {
    const { group, owner, member } = await groupWithMember();
    const ownerSocket = await listening(owner, group.id);
    const memberSocket = await sockets.open(member.access_token);
    const promoted = (
      await expectStatus(200, 'PATCH', `/api/groups/${group.id}/members/${member.user.id}`, owner, {
        role: 'admin',
      })
    ).json();
    expect(promoted).toMatchObject({ user_id: member.user.id, role: 'admin' });
    const changed = { group_id: group.id, member: promoted, by: owner.user.id };
    expect((await ownerSocket.next(ofType('group.role_changed'))).d).toEqual(changed);
    expect((await memberSocket.next(ofType('group.role_changed'))).d).toEqual(changed);
    await expectStatus(200, 'PATCH', `/api/groups/${group.id}/members/${member.user.id}`, owner, {
      role: 'admin',
    });
    await sent(owner, group.id, 'after the same role again');
    await ownerSocket.next(isMessage('after the same role again'));
    expect(left(ownerSocket, 'group.role_changed')).toEqual([]);
  });

  it("sends group.ownership_changed on a transfer to the joined sockets and to both owners' own sockets", async () => {
    const { group, owner, member } = await groupWithMember();
    const bystander = await user();
    await joined(bystander, group.id);
    const bystanderSocket = await listening(bystander, group.id);
    const [ownerSocket, memberSocket] = [
      await sockets.open(owner.access_token),
      await sockets.open(member.access_token),
    ];
    const transferred = (
      await expectStatus(200, 'POST', `/api/groups/${group.id}/transfer`, owner, { user_id: member.user.id })
    ).json();
    expect(transferred).toMatchObject({ id: group.id, owner_id: member.user.id });
    const event = { group_id: group.id, owner_id: member.user.id, previous_owner_id: owner.user.id };
    for (const socket of [bystanderSocket, ownerSocket, memberSocket])
      expect((await socket.next(ofType('group.ownership_changed'))).d).toEqual(event);
  });

  it("sends group.ownership_changed with previous_owner_id null when an admin claims a group whose owner's account was deleted", async () => {
    const { group, owner, admin, member } = await cast();
    const memberSocket = await listening(member, group.id);
    const adminSocket = await sockets.open(admin.access_token);
    await expectStatus(204, 'DELETE', '/api/users/me', owner, { password: PASSWORD });
    const claimed = (await expectStatus(200, 'POST', `/api/groups/${group.id}/claim`, admin)).json();
    expect(claimed).toMatchObject({ id: group.id, owner_id: admin.user.id });
    const event = { group_id: group.id, owner_id: admin.user.id, previous_owner_id: null };
    expect((await memberSocket.next(ofType('group.ownership_changed'))).d).toEqual(event);
    expect((await adminSocket.next(ofType('group.ownership_changed'))).d).toEqual(event);
  });

  it('sends group.updated with the changed group, then group.deleted, to the joined sockets', async () => {
    const { group, owner, member } = await groupWithMember();
    const memberSocket = await listening(member, group.id);
    const updated = (
      await expectStatus(200, 'PATCH', `/api/groups/${group.id}`, owner, {
        description: 'now with a description',
        join_policy: 'closed',
      })
    ).json();
    expect(updated).toMatchObject({
      id: group.id,
      description: 'now with a description',
      join_policy: 'closed',
    });
    expect((await memberSocket.next(ofType('group.updated'))).d).toEqual({ group: updated });
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}`, owner);
    expect((await memberSocket.next(ofType('group.deleted'))).d).toEqual({ group_id: group.id });
  });

  it("sends group.join_requested and group.request_declined to the requester, the owner and the admins, but not to a plain member's socket", async () => {
    const { group, owner, admin, member } = await cast();
    const asking = await user();
    const memberSocket = await listening(member, group.id);
    // The owner's socket joined the chat; the admin's only has its own topic.
    const ownerSocket = await listening(owner, group.id);
    const [adminSocket, askingSocket] = [
      await sockets.open(admin.access_token),
      await sockets.open(asking.access_token),
    ];
    await requested(asking, group.id);
    const made = { group_id: group.id, user_id: asking.user.id, by: null };
    for (const socket of [ownerSocket, adminSocket, askingSocket])
      expect((await socket.next(ofType('group.join_requested'))).d).toEqual(made);
    await expectStatus(204, 'POST', `/api/groups/${group.id}/requests/${asking.user.id}/decline`, admin);
    const declined = { group_id: group.id, user_id: asking.user.id, by: admin.user.id };
    for (const socket of [ownerSocket, adminSocket, askingSocket])
      expect((await socket.next(ofType('group.request_declined'))).d).toEqual(declined);
    // Published on the group's topic after both, so a request event for the member would have come first.
    await sent(owner, group.id, 'after the decline');
    await memberSocket.next(isMessage('after the decline'));
    expect(memberSocket.frames.filter((f) => f.t.startsWith('group.'))).toEqual([]);
    // Each manager's socket got each event once, whether or not it joined the chat.
    expect(left(ownerSocket, 'group.join_requested')).toEqual([]);
    expect(left(ownerSocket, 'group.request_declined')).toEqual([]);
  });

  it('sends a member whose socket joined the chat each event about them once, as their own event', async () => {
    const { group, owner, member } = await groupWithMember();
    const memberSocket = await listening(member, group.id);
    await expectStatus(200, 'PATCH', `/api/groups/${group.id}/members/${member.user.id}`, owner, {
      role: 'admin',
    });
    await expectStatus(200, 'POST', `/api/groups/${group.id}/transfer`, owner, { user_id: member.user.id });
    const changed = await memberSocket.next(ofType('group.role_changed'));
    // Heard on the user's own stream (its position names no stream), not the group's.
    expect((changed.pos as { stream?: string } | undefined)?.stream).toBeUndefined();
    await memberSocket.next(ofType('group.ownership_changed'));
    await sent(owner, group.id, 'after both');
    await memberSocket.next(isMessage('after both'));
    expect(left(memberSocket, 'group.role_changed')).toEqual([]);
    expect(left(memberSocket, 'group.ownership_changed')).toEqual([]);
  });

  it('sends group.request_withdrawn to the owner, the admins and the requester when a request is withdrawn', async () => {
    const { group, owner, admin } = await cast();
    const asking = await user();
    const [ownerSocket, adminSocket, askingSocket] = [
      await sockets.open(owner.access_token),
      await sockets.open(admin.access_token),
      await sockets.open(asking.access_token),
    ];
    await requested(asking, group.id);
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}/members/${asking.user.id}`, asking);
    const withdrawn = { group_id: group.id, user_id: asking.user.id, by: asking.user.id };
    for (const socket of [ownerSocket, adminSocket, askingSocket])
      expect((await socket.next(ofType('group.request_withdrawn'))).d).toEqual(withdrawn);
  });

  it("stops a kicked member's joined socket from hearing the group's chat at once, while the others still do", async () => {
    const { group, owner, member } = await groupWithMember();
    const stayer = await user();
    await joined(stayer, group.id);
    const [kickedSocket, stayerSocket] = [
      await listening(member, group.id),
      await listening(stayer, group.id),
    ];
    await sent(owner, group.id, 'before the kick');
    await kickedSocket.next(isMessage('before the kick'));
    await kick(owner, group.id, member.user.id);
    await sent(owner, group.id, 'right after the kick');
    await expect(stayerSocket.next(ofType('group.member_kicked'))).resolves.toMatchObject({
      d: { user_id: member.user.id, by: owner.user.id },
    });
    await stayerSocket.next(isMessage('right after the kick'));
    // Published after the message: the kicked socket would have been sent the message first.
    await dm(owner, member, 'marker');
    await kickedSocket.next(isDm('marker'));
    expect((await kickedSocket.next(ofType('group.member_kicked'))).d).toEqual({
      group_id: group.id,
      user_id: member.user.id,
      by: owner.user.id,
    });
    // Once, on the user's own topic: the socket had left the group's topic before it went out.
    expect(left(kickedSocket, 'group.member_kicked')).toEqual([]);
    expect(left(kickedSocket, 'chat.message')).toEqual([]);
  });

  it("stops a leaving member's joined socket from hearing the group's chat", async () => {
    const { group, owner, member } = await groupWithMember();
    const socket = await listening(member, group.id);
    await kick(member, group.id, member.user.id);
    await socket.next(ofType('group.member_left'));
    await sent(owner, group.id, 'after they left');
    await dm(owner, member, 'marker');
    await socket.next(isDm('marker'));
    expect(left(socket, 'chat.message')).toEqual([]);
  });

  it("leaves the member's other groups' chats alone when they are kicked from one", async () => {
    const { group, owner, member } = await groupWithMember();
    const other = await createGroup(owner);
    await joined(member, other.id);
    const socket = await listening(member, group.id);
    await request(socket, 'chat.join', { group_id: other.id });
    await kick(owner, group.id, member.user.id);
    await socket.next(ofType('group.member_kicked'));
    await sent(owner, other.id, 'the other group');
    expect((await socket.next(isMessage('the other group'))).d).toMatchObject({ group_id: other.id });
  });

  it('stops delivering after chat.leave {group_id}, leaving the other joined chats alone', async () => {
    const { group, owner, member } = await groupWithMember();
    const other = await createGroup(owner);
    await joined(member, other.id);
    const socket = await listening(member, group.id);
    await request(socket, 'chat.join', { group_id: other.id });
    // Any spelling of the id leaves the chat joined under the canonical one.
    expect(await request(socket, 'chat.leave', { group_id: group.id.toUpperCase() })).toMatchObject({
      t: 'ack',
      d: {},
    });
    await sent(owner, group.id, 'unheard');
    await joined(await user(), group.id);
    await sent(owner, other.id, 'heard');
    await socket.next(isMessage('heard'));
    expect(left(socket, 'chat.message')).toEqual([]);
    expect(left(socket, 'group.member_joined')).toEqual([]);
  });

  it('a rejoin with recover gets the missed messages and roster events, in order, before the ack says recovered', async () => {
    const { group, owner, member } = await groupWithMember();
    const first = await listening(member, group.id);
    await sent(owner, group.id, 'before');
    const heard = await first.next(isMessage('before'));
    const { stream, ...last } = heard.pos as Position & { stream: string };
    expect(stream).toBe(`group:${group.id}`);
    first.close();
    await first.closed;
    await sent(owner, group.id, 'one');
    const newcomer = await user();
    await joined(newcomer, group.id);
    await sent(owner, group.id, 'two');
    const socket = await sockets.open(member.access_token);
    const answer = await request(socket, 'chat.join', { group_id: group.id, recover: last });
    expect(answer).toMatchObject({
      t: 'ack',
      d: { group_id: group.id, recovered: true, position: { ...last, offset: last.offset + 3 } },
    });
    const replayed = socket.frames.filter((f) => f.t !== 'ack');
    expect(replayed.map((f) => [f.t, (f.d as { body?: string }).body])).toEqual([
      ['chat.message', 'one'],
      ['group.member_joined', undefined],
      ['chat.message', 'two'],
    ]);
    expect(replayed[1]?.d).toMatchObject({ member: { user_id: newcomer.user.id }, by: null });
    expect(replayed.map((f) => (f.pos as Position).offset)).toEqual([1, 2, 3].map((n) => last.offset + n));
  });

  it('refuses a kicked member a rejoin with recover with 403, replaying nothing', async () => {
    const { group, owner, member } = await groupWithMember();
    const first = await listening(member, group.id);
    await sent(owner, group.id, 'before');
    const { stream: _, ...last } = (await first.next(isMessage('before'))).pos as Position & {
      stream: string;
    };
    first.close();
    await kick(owner, group.id, member.user.id);
    await sent(owner, group.id, 'not for the kicked');
    const socket = await sockets.open(member.access_token);
    expect(await request(socket, 'chat.join', { group_id: group.id, recover: last })).toMatchObject({
      t: 'error',
      code: 'FORBIDDEN',
    });
    expect(left(socket, 'chat.message')).toEqual([]);
  });

  it('answers a second chat.join of the same group with no position and replays nothing', async () => {
    const { group, member } = await groupWithMember();
    const socket = await listening(member, group.id);
    const again = await request(socket, 'chat.join', {
      group_id: group.id,
      recover: { offset: 0, epoch: 'x' },
    });
    expect(again).toMatchObject({ t: 'ack', d: { group_id: group.id } });
    expect(again.d).not.toHaveProperty('position');
    expect(again.d).not.toHaveProperty('recovered');
  });

  it('refuses chat.join with both a world and a group, or unknown fields, with VALIDATION_FAILED', async () => {
    const { group, member } = await groupWithMember();
    const socket = await sockets.open(member.access_token);
    for (const d of [
      { group_id: group.id, world_id: group.id },
      { group_id: group.id, extra: true },
      { group_id: 'x'.repeat(65) },
    ])
      expect(await request(socket, 'chat.join', d)).toMatchObject({ t: 'error', code: 'VALIDATION_FAILED' });
  });
});
