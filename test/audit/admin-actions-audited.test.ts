import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { type OperationName, operations } from '../../protocol/operations.js';
import { ConsoleClient } from '../console/console-client.js';
import { recordingCommand } from '../gameservers/gameservers.js';
import { groupCalls } from '../groups/groups.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld, worldWithHistory } from '../helpers/worlds.js';
import { moderationCalls } from '../moderation/moderation.js';
import { adminActionCalls } from './admin-actions.js';

/**
 * Every action an admin or a moderator takes on something not their own appends exactly one audit
 * entry naming them, the action and its target. The operations to cover come from the catalogue:
 * each one open to the service's staff (under /api/admin, /api/economy/admin or /api/moderation,
 * or whose summary names admins or moderators) is either performed below or listed as not audited
 * with why, so a new staff operation fails the first test until it is one or the other.
 */

type Staff = 'moderator' | 'admin';

interface AuditedAction {
  by: Staff;
  action: string;
  targetType: string;
  /** Builds what the action acts on, as its owner would, then performs it as `actor`; answers the target's id. */
  act: (actor: TokenResponse) => Promise<string>;
}

/**
 * An endpoint on a documentation address (TEST-NET-3) the address rules let through: subscribed to
 * no event of these tests, unless a test says otherwise, and never answering.
 */
const QUIET_HOOK = { url: 'https://203.0.113.10/hooks', events: ['gameserver.failed'] };

/** A tournament of the next hour. */
const tournamentWindow = (id: string) => ({
  id,
  title: 'Audited cup',
  start_at: new Date().toISOString(),
  end_at: new Date(Date.now() + 3600_000).toISOString(),
});

/** Staff operations that write no audit entry, and why. */
const notAudited: Partial<Record<OperationName, string>> = {
  'admin.audit.list': 'a read',
  'admin.users.list': 'a read',
  'admin.users.get': 'a read',
  'admin.parties.ofUser': 'a read',
  'admin.worlds.list': 'a read',
  'admin.groups.list': 'a read',
  'admin.servers.list': 'a read',
  'admin.config': 'a read',
  'revisions.list': "a read (staff read any world's history)",
  'reports.list': 'a read',
  'gameservers.get': 'a read',
  'economy.admin.ledger': 'a read',
  'economy.admin.payouts': 'a read',
  'economy.admin.verify': 'a read: the ledger check writes nothing',
  'economy.transaction': 'a read',
  'economy.payouts.get': 'a read',
  'economy.purchases.get': 'a read',
  'economy.items.list': 'a read (admins see drafts)',
  'webhooks.admin.list': 'a read',
  'webhooks.admin.get': 'a read',
  'webhooks.admin.deliveries': 'a read',
  'economy.items.get': 'a read (admins see drafts)',
  'groups.update': "a group's own admins (a role in the group, not of the service) acting in their group",
  'groups.members': 'a read; "admins" are a role in the group',
  'groups.requests': "a read by the group's own admins",
  'groups.approve': "a group's own admins acting in their group",
  'groups.decline': "a group's own admins acting in their group",
  'groups.removeMember':
    "the group's owner or its own admins; staff remove through admin.groups.removeMember",
  'groups.setRole': "a group's owner or its own admins acting in their group",
  'groups.transfer': "the group's owner",
  'groups.claim': "a group's own longest-standing admin taking over an ownerless group",
};

/** An operation the service's staff may call, by where it lives or by its summary naming them. */
const staffOperations = Object.values(operations).filter(
  (op) =>
    /^\/api\/(admin|economy\/admin|moderation)(\/|$)/.test(op.rest?.path ?? '') ||
    /\b(admins?|moderators?)\b/i.test(op.summary),
);

describe('admin and moderator actions in the audit log', () => {
  const { command } = recordingCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command, ECONOMY_PAYOUT_MINIMUM: 100 });
  const calls = adminActionCalls(app);
  const { expectStatus } = calls;
  const groups = groupCalls(app);
  const moderation = moderationCalls(app);
  /** An admin that sets up fixtures (grants, suspensions) and reads the audit log. */
  let operator: TokenResponse | undefined;
  const admin = async () => {
    operator ??= await registerWithRole(app(), 'admin');
    return operator;
  };
  const user = () => registerUser(app());
  const userApi = (target: TokenResponse) => `/api/admin/users/${target.user.id}`;

  const audited: Partial<Record<OperationName, AuditedAction>> = {
    'admin.users.suspend': {
      by: 'moderator',
      action: 'users.suspend',
      targetType: 'user',
      act: async (actor) => {
        const target = await user();
        await expectStatus(200, 'POST', `${userApi(target)}/suspension`, actor, { reason: 'spam' });
        return target.user.id;
      },
    },
    'admin.users.unsuspend': {
      by: 'moderator',
      action: 'users.unsuspend',
      targetType: 'user',
      act: async (actor) => {
        const target = await user();
        await expectStatus(200, 'POST', `${userApi(target)}/suspension`, await admin(), { reason: 'spam' });
        await expectStatus(200, 'DELETE', `${userApi(target)}/suspension`, actor);
        return target.user.id;
      },
    },
    'admin.users.roles.grant': {
      by: 'admin',
      action: 'users.roles.grant',
      targetType: 'user',
      act: async (actor) => {
        const target = await user();
        await expectStatus(200, 'PUT', `${userApi(target)}/roles/moderator`, actor);
        return target.user.id;
      },
    },
    'admin.users.roles.revoke': {
      by: 'admin',
      action: 'users.roles.revoke',
      targetType: 'user',
      act: async (actor) => {
        const target = await registerWithRole(app(), 'moderator');
        await expectStatus(200, 'DELETE', `${userApi(target)}/roles/moderator`, actor);
        return target.user.id;
      },
    },
    'admin.users.sessions.revoke': {
      by: 'admin',
      action: 'users.sessions.revoke',
      targetType: 'user',
      act: async (actor) => {
        const target = await user();
        await expectStatus(200, 'DELETE', `${userApi(target)}/sessions`, actor);
        return target.user.id;
      },
    },
    'admin.worlds.update': {
      by: 'admin',
      action: 'worlds.visibility',
      targetType: 'world',
      act: async (actor) => {
        const { worldId } = await createWorld(app(), (await user()).access_token);
        await expectStatus(200, 'PATCH', `/api/admin/worlds/${worldId}`, actor, { visibility: 'public' });
        return worldId;
      },
    },
    'worlds.rollback': {
      by: 'admin',
      action: 'worlds.rollback',
      targetType: 'world',
      act: async (actor) => {
        const { worldId, first } = await worldWithHistory(app());
        await expectStatus(200, 'POST', `/api/worlds/${worldId}/rollback`, actor, { revision: first });
        return worldId;
      },
    },
    'reports.update': {
      by: 'moderator',
      action: 'moderation.reports.resolve',
      targetType: 'report',
      act: async (actor) => {
        const [sender, reporter] = [await user(), await user()];
        const report = await moderation.reported(reporter, await moderation.directMessage(sender, reporter));
        await expectStatus(200, 'PATCH', `/api/moderation/reports/${report.id}`, actor, {
          state: 'resolved',
          delete_message: true,
        });
        return report.id;
      },
    },
    'admin.groups.removeMember': {
      by: 'moderator',
      action: 'groups.members.remove',
      targetType: 'group',
      act: async (actor) => {
        const [group, member] = [await groups.createGroup(await user()), await user()];
        await groups.joined(member, group.id);
        await expectStatus(204, 'DELETE', `/api/admin/groups/${group.id}/members/${member.user.id}`, actor);
        return group.id;
      },
    },
    'admin.groups.delete': {
      by: 'moderator',
      action: 'groups.delete',
      targetType: 'group',
      act: async (actor) => {
        const group = await groups.createGroup(await user());
        await expectStatus(204, 'DELETE', `/api/admin/groups/${group.id}`, actor);
        return group.id;
      },
    },
    'gameservers.spawn': {
      by: 'admin',
      action: 'gameservers.spawn',
      targetType: 'game_server',
      act: async (actor) => {
        const { worldId } = await createWorld(app(), (await user()).access_token);
        return (await expectStatus(202, 'POST', `/api/worlds/${worldId}/servers`, actor)).json().server_id;
      },
    },
    'gameservers.stop': {
      by: 'admin',
      action: 'gameservers.stop',
      targetType: 'game_server',
      act: async (actor) => {
        const owner = await user();
        const { worldId } = await createWorld(app(), owner.access_token);
        const server = (await expectStatus(202, 'POST', `/api/worlds/${worldId}/servers`, owner)).json();
        await expectStatus(204, 'DELETE', `/api/servers/${server.server_id}`, actor);
        return server.server_id;
      },
    },
    'leaderboards.admin.create': {
      by: 'admin',
      action: 'leaderboards.create',
      targetType: 'leaderboard',
      act: async (actor) => {
        const id = `audited-${randomUUID().slice(0, 8)}`;
        await expectStatus(201, 'POST', '/api/admin/leaderboards', actor, { id });
        return id;
      },
    },
    'leaderboards.admin.delete': {
      by: 'admin',
      action: 'leaderboards.delete',
      targetType: 'leaderboard',
      act: async (actor) => {
        const id = `audited-${randomUUID().slice(0, 8)}`;
        await expectStatus(201, 'POST', '/api/admin/leaderboards', await admin(), { id });
        await expectStatus(204, 'DELETE', `/api/admin/leaderboards/${id}`, actor);
        return id;
      },
    },
    'leaderboards.admin.deleteRecord': {
      by: 'admin',
      action: 'leaderboards.records.delete',
      targetType: 'leaderboard',
      act: async (actor) => {
        const id = `audited-${randomUUID().slice(0, 8)}`;
        await expectStatus(201, 'POST', '/api/admin/leaderboards', await admin(), { id });
        const cheater = await user();
        await expectStatus(200, 'POST', `/api/leaderboards/${id}/records`, cheater, { score: 10 ** 9 });
        await expectStatus(204, 'DELETE', `/api/admin/leaderboards/${id}/records/${cheater.user.id}`, actor, {
          reason: 'an impossible score',
        });
        return id;
      },
    },
    'notifications.admin.broadcast': {
      by: 'admin',
      action: 'notifications.broadcast',
      targetType: 'notification_broadcast',
      act: async (actor) => {
        const target = await user();
        const sent = await expectStatus(202, 'POST', '/api/admin/notifications', actor, {
          user_ids: [target.user.id],
          code: 'news.audited',
          subject: 'An audited broadcast',
        });
        return sent.json().id as string;
      },
    },
    'webhooks.admin.create': {
      by: 'admin',
      action: 'webhooks.create',
      targetType: 'webhook',
      act: async (actor) =>
        (await expectStatus(201, 'POST', '/api/admin/webhooks', actor, QUIET_HOOK)).json().id,
    },
    'webhooks.admin.update': {
      by: 'admin',
      action: 'webhooks.update',
      targetType: 'webhook',
      act: async (actor) => {
        const { id } = (
          await expectStatus(201, 'POST', '/api/admin/webhooks', await admin(), QUIET_HOOK)
        ).json();
        await expectStatus(200, 'PATCH', `/api/admin/webhooks/${id}`, actor, { enabled: false });
        return id;
      },
    },
    'webhooks.admin.delete': {
      by: 'admin',
      action: 'webhooks.delete',
      targetType: 'webhook',
      act: async (actor) => {
        const { id } = (
          await expectStatus(201, 'POST', '/api/admin/webhooks', await admin(), QUIET_HOOK)
        ).json();
        await expectStatus(204, 'DELETE', `/api/admin/webhooks/${id}`, actor);
        return id;
      },
    },
    'webhooks.admin.rotateSecret': {
      by: 'admin',
      action: 'webhooks.rotate_secret',
      targetType: 'webhook',
      act: async (actor) => {
        const { id } = (
          await expectStatus(201, 'POST', '/api/admin/webhooks', await admin(), QUIET_HOOK)
        ).json();
        await expectStatus(200, 'POST', `/api/admin/webhooks/${id}/rotate-secret`, actor);
        return id;
      },
    },
    'webhooks.admin.redeliver': {
      by: 'admin',
      action: 'webhooks.redeliver',
      targetType: 'webhook',
      act: async (actor) => {
        const { id } = (
          await expectStatus(201, 'POST', '/api/admin/webhooks', await admin(), {
            ...QUIET_HOOK,
            events: ['user.registered'],
          })
        ).json();
        await user();
        const delivery = await vi.waitFor(
          async () => {
            const page = await expectStatus(
              200,
              'GET',
              `/api/admin/webhooks/${id}/deliveries`,
              await admin(),
            );
            const [first] = page.json().items as { id: string }[];
            if (!first) throw new Error('no delivery yet');
            return first;
          },
          { timeout: 30_000, interval: 50 },
        );
        await expectStatus(
          202,
          'POST',
          `/api/admin/webhooks/${id}/deliveries/${delivery.id}/redeliver`,
          actor,
        );
        return id;
      },
    },
    'tournaments.admin.create': {
      by: 'admin',
      action: 'tournaments.create',
      targetType: 'tournament',
      act: async (actor) => {
        const id = `audited-${randomUUID().slice(0, 8)}`;
        await expectStatus(201, 'POST', '/api/admin/tournaments', actor, tournamentWindow(id));
        return id;
      },
    },
    'tournaments.admin.delete': {
      by: 'admin',
      action: 'tournaments.delete',
      targetType: 'tournament',
      act: async (actor) => {
        const id = `audited-${randomUUID().slice(0, 8)}`;
        await expectStatus(201, 'POST', '/api/admin/tournaments', await admin(), tournamentWindow(id));
        await expectStatus(204, 'DELETE', `/api/admin/tournaments/${id}`, actor);
        return id;
      },
    },
    'economy.admin.grant': {
      by: 'admin',
      action: 'economy.grant',
      targetType: 'user',
      act: async (actor) => {
        const target = await user();
        await expectStatus(201, 'POST', '/api/economy/admin/grants', actor, {
          user_id: target.user.id,
          amount: 250,
          reason: 'welcome',
        });
        return target.user.id;
      },
    },
    'economy.admin.payouts.decide': {
      by: 'admin',
      action: 'economy.payouts.approve',
      targetType: 'payout',
      act: async (actor) => {
        const payoutId = await calls.payoutRequest(await admin());
        await expectStatus(200, 'PATCH', `/api/economy/admin/payouts/${payoutId}`, actor, {
          state: 'approved',
          expected_state: 'requested',
        });
        return payoutId;
      },
    },
    'economy.admin.refund': {
      by: 'admin',
      action: 'economy.purchases.refund',
      targetType: 'purchase',
      act: async (actor) => {
        const { purchaseId } = await calls.purchase(await admin());
        await expectStatus(200, 'POST', `/api/economy/admin/purchases/${purchaseId}/refund`, actor, {
          reason: 'chargeback',
        });
        return purchaseId;
      },
    },
    'economy.listings.cancel': {
      by: 'admin',
      action: 'economy.listings.cancel',
      targetType: 'listing',
      act: async (actor) => {
        const { listingId } = await calls.listing();
        await expectStatus(204, 'DELETE', `/api/economy/listings/${listingId}`, actor);
        return listingId;
      },
    },
  };

  /** What the audit log holds of `actor`'s actions and of `action` on `targetId`, as an admin reads it. */
  const expectOneEntry = async (
    actor: { kind: 'user'; id: string } | { kind: 'cli' },
    action: string,
    target: { type: string; id: string },
  ) => {
    const entry = {
      actor_kind: actor.kind,
      actor_id: actor.kind === 'user' ? actor.id : null,
      action,
      target_type: target.type,
      target_id: target.id,
    };
    const onTarget = (await calls.auditOf(await admin(), target.id)).filter((e) => e.action === action);
    expect(onTarget.map((e) => ({ ...pick(e, entry) }))).toEqual([entry]);
    if (actor.kind === 'user') {
      const byActor = (
        await expectStatus(200, 'GET', `/api/admin/audit?actor=${actor.id}`, await admin())
      ).json();
      expect(byActor.items.map((e: typeof entry) => pick(e, entry))).toEqual([entry]);
    }
  };

  it('covers every operation open to admins or moderators: performed below, or listed as not audited with why', () => {
    const covered = new Set<string>([...Object.keys(audited), ...Object.keys(notAudited)]);
    expect(staffOperations.map((op) => op.name).filter((name) => !covered.has(name))).toEqual([]);
    expect([...covered].filter((name) => !(name in operations))).toEqual([]);
    // A write under the staff routes is never waved through as not audited.
    const staffWrites = staffOperations.filter(
      (op) =>
        /^\/api\/(admin|economy\/admin|moderation)\//.test(op.rest?.path ?? '') && op.rest?.method !== 'GET',
    );
    expect(staffWrites.map((op) => op.name).filter((name) => !(name in audited))).toEqual([]);
  });

  it.each(Object.entries(audited))(
    'records %s once, naming its actor, action and target',
    async (_op, action) => {
      const { by, action: name, targetType, act } = action as AuditedAction;
      const actor = await registerWithRole(app(), by);
      const targetId = await act(actor);
      await expectOneEntry({ kind: 'user', id: actor.user.id }, name, { type: targetType, id: targetId });
    },
  );

  it('records a console action once, as the route it calls does', async () => {
    const moderator = await registerWithRole(app(), 'moderator');
    const target = await user();
    await expectStatus(200, 'POST', `${userApi(target)}/suspension`, await admin(), { reason: 'spam' });
    const browser = await new ConsoleClient(app()).signedIn(moderator.user.username);
    expect((await browser.post(`/console/users/${target.user.id}/unsuspend`, {})).statusCode).toBe(303);
    await expectOneEntry({ kind: 'user', id: moderator.user.id }, 'users.unsuspend', {
      type: 'user',
      id: target.user.id,
    });
  });

  it("records a CLI role change once, with actor cli, through the server's control channel", async () => {
    const target = await user();
    const reply = await app().control.execute({
      command: 'admin.grant',
      args: { username: target.user.username, role: 'moderator' },
    });
    expect(reply).toMatchObject({ ok: true });
    await expectOneEntry({ kind: 'cli' }, 'users.roles.grant', { type: 'user', id: target.user.id });
  });
});

/** The fields of `entry` that `like` names. */
function pick<T extends object>(entry: T, like: Record<string, unknown>): Partial<T> {
  return Object.fromEntries(
    Object.keys(like).map((key) => [key, (entry as Record<string, unknown>)[key]]),
  ) as Partial<T>;
}
