import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Notification } from '../../protocol/notifications.js';
import { registerUser } from '../helpers/accounts.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { consumerOf, recordedEvents } from '../helpers/domain-events.js';
import { openedSockets } from '../helpers/ws-client.js';
import { groupCalls, uniqueGroupName } from './groups.js';

/**
 * What groups notify (docs/notifications.md, "What the system notifies") and the `group.created`
 * domain event. A module consuming `group.created` is added and the app's outbox is stopped
 * (test/helpers/domain-events.ts), so what was recorded stays in outbox_events to be read.
 */

describe('group notifications', () => {
  const app = useTestApp(
    { SOCIAL_RATE_LIMIT_COUNT: 100_000, CREATE_RATE_LIMIT_COUNT: 100_000, GROUP_MAX_MEMBERS: 3 },
    { modules: [...testModules, consumerOf('group.created')] },
  );
  const { call, expectStatus, createGroup, joined, requested, cast } = groupCalls(app);
  const sockets = openedSockets(() => app().wsUrl);
  const { recordedBy } = recordedEvents(app);
  afterAll(() => sockets.closeAll());
  beforeAll(async () => {
    await app().outbox.stop();
  });

  /** The user's notifications, newest first. */
  const inbox = async (user: TokenResponse): Promise<Notification[]> =>
    (await expectStatus(200, 'GET', '/api/notifications', user)).json().items;
  /** Each user's notifications, to compare before and after a change that must notify nobody. */
  const inboxes = (users: TokenResponse[]) => Promise.all(users.map(inbox));

  /** A closed group of a new owner, with `requesters` asking to join it. */
  const closedGroup = async (requesters: number) => {
    const owner = await registerUser(app());
    const group = await createGroup(owner, { join_policy: 'closed' });
    const asking = await Promise.all(Array.from({ length: requesters }, () => registerUser(app())));
    for (const user of asking) await requested(user, group.id);
    return { owner, group, asking };
  };

  describe('group.join_requested', () => {
    it("notifies a closed group's owner and each admin of a join request, from the requester", async () => {
      const { group, owner, admin, member, requester } = await cast();
      const note = {
        code: 'group.join_requested',
        subject: `${requester.user.username} asked to join ${group.name}`,
        content: {
          group: { id: group.id, name: group.name },
          user: { id: requester.user.id, username: requester.user.username },
        },
        sender_id: requester.user.id,
        read_at: null,
      };
      expect(await inbox(owner)).toEqual([expect.objectContaining(note)]);
      expect(await inbox(admin)).toEqual([expect.objectContaining(note)]);
      expect(await inboxes([member, requester])).toEqual([[], []]);
    });

    it('notifies nobody of a join of an open group', async () => {
      const owner = await registerUser(app());
      const group = await createGroup(owner);
      await joined(await registerUser(app()), group.id);
      expect(await inbox(owner)).toEqual([]);
    });

    it('notifies nobody of a refused request, which writes nothing', async () => {
      const { owner, group, asking } = await closedGroup(1);
      const [requester] = asking as [TokenResponse];
      const before = await inboxes([owner, requester]);
      const twice = await call('POST', `/api/groups/${group.id}/members`, requester);
      expect([twice.statusCode, twice.json().code]).toEqual([409, 'CONFLICT']);
      const ownerJoining = await call('POST', `/api/groups/${group.id}/members`, owner);
      expect(ownerJoining.statusCode).toBe(409);
      expect(await inboxes([owner, requester])).toEqual(before);
    });

    it("pushes the request live to the managers' sockets", async () => {
      const owner = await registerUser(app());
      const group = await createGroup(owner, { join_policy: 'closed' });
      const socket = await sockets.open(owner.access_token);
      await requested(await registerUser(app()), group.id);
      const frame = await socket.next((f) => f.t === 'notification', 5_000);
      expect(frame).toEqual({ t: 'notification', d: (await inbox(owner))[0], pos: expect.anything() });
      expect(frame.d).toMatchObject({ code: 'group.join_requested' });
    });
  });

  describe('group.join_approved', () => {
    it('notifies the requester of an approval, from the approver, and nobody else', async () => {
      const { owner, group, asking } = await closedGroup(1);
      const [requester] = asking as [TokenResponse];
      const ownerBefore = await inbox(owner);
      const socket = await sockets.open(requester.access_token);
      await expectStatus(201, 'POST', `/api/groups/${group.id}/requests/${requester.user.id}/approve`, owner);
      const notes = await inbox(requester);
      expect(notes).toEqual([
        expect.objectContaining({
          code: 'group.join_approved',
          subject: `Your request to join ${group.name} was approved`,
          content: { group: { id: group.id, name: group.name } },
          sender_id: owner.user.id,
          read_at: null,
        }),
      ]);
      expect(await inbox(owner)).toEqual(ownerBefore);
      const frame = await socket.next((f) => f.t === 'notification', 5_000);
      expect(frame).toEqual({ t: 'notification', d: notes[0], pos: expect.anything() });
    });

    it('names the admin who approved as the sender', async () => {
      const { group, admin, member, requester } = await cast();
      // The cast's group is full (GROUP_MAX_MEMBERS 3): its member leaves to make room.
      await expectStatus(204, 'DELETE', `/api/groups/${group.id}/members/${member.user.id}`, member);
      await expectStatus(201, 'POST', `/api/groups/${group.id}/requests/${requester.user.id}/approve`, admin);
      expect(await inbox(requester)).toEqual([
        expect.objectContaining({ code: 'group.join_approved', sender_id: admin.user.id }),
      ]);
    });

    it('notifies nobody of a refused approval, which writes nothing', async () => {
      const { group, owner, admin, member, requester, outsider } = await cast();
      const everyone = [owner, admin, member, requester, outsider];
      const before = await inboxes(everyone);
      const approve = (by: TokenResponse, userId = requester.user.id) =>
        call('POST', `/api/groups/${group.id}/requests/${userId}/approve`, by);
      const full = await approve(owner);
      expect([full.statusCode, full.json().code]).toEqual([409, 'GROUP_FULL']);
      expect((await approve(member)).statusCode).toBe(403);
      expect((await approve(owner, outsider.user.id)).statusCode).toBe(404);
      expect(await inboxes(everyone)).toEqual(before);
    });
  });

  it('notifies nobody of a declined or withdrawn request, or of a kick', async () => {
    const { owner, group, asking } = await closedGroup(2);
    const [declined, withdrawing] = asking as [TokenResponse, TokenResponse];
    const everyone = [owner, declined, withdrawing];
    const before = await inboxes(everyone);
    await expectStatus(204, 'POST', `/api/groups/${group.id}/requests/${declined.user.id}/decline`, owner);
    await expectStatus(204, 'DELETE', `/api/groups/${group.id}/members/${withdrawing.user.id}`, withdrawing);
    expect(await inboxes(everyone)).toEqual(before);

    const open = await createGroup(owner);
    const kicked = await registerUser(app());
    await joined(kicked, open.id);
    await expectStatus(204, 'DELETE', `/api/groups/${open.id}/members/${kicked.user.id}`, owner);
    expect(await inboxes([owner, kicked])).toEqual([before[0], []]);
  });

  describe('group.created', () => {
    it('is recorded with the group as POST /api/groups answers it', async () => {
      const owner = await registerUser(app());
      let group: unknown;
      const events = await recordedBy('group.created', async () => {
        group = await createGroup(owner, { description: 'Builders of things', join_policy: 'closed' });
      });
      expect(events).toEqual([{ group }]);
    });

    it('is not recorded for a refused creation', async () => {
      const owner = await registerUser(app());
      const name = uniqueGroupName();
      await createGroup(owner, { name });
      const other = await registerUser(app());
      const events = await recordedBy('group.created', async () => {
        const taken = await call('POST', '/api/groups', other, { name: name.toUpperCase() });
        expect([taken.statusCode, taken.json().code]).toEqual([409, 'CONFLICT']);
      });
      expect(events).toEqual([]);
    });
  });
});
