import { describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { PartiesApi } from '../../src/modules/parties/index.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { partyCalls } from './parties.js';

// One app for the file: its parts need the same settings, and each test makes its own users.
const app = useTestApp();

describe('parties under concurrent requests', () => {
  const { call, users, createParty, joined, stateOf } = partyCalls(app);
  const outcomes = (responses: { statusCode: number; body: string }[]) =>
    responses
      .map((r) => `${r.statusCode} ${r.statusCode < 300 ? '' : JSON.parse(r.body).code}`.trim())
      .sort();

  it('admits exactly 3 of 10 concurrent joins of an open party of one with max_size 4', async () => {
    const [leader, ...joiners] = await users(11);
    const party = await createParty(leader, { open: true, max_size: 4 });
    const responses = await Promise.all(
      joiners.map((joiner) => call('POST', `/api/parties/${party.id}/join`, joiner)),
    );
    expect(outcomes(responses)).toEqual([...Array(3).fill('200'), ...Array(7).fill('409 PARTY_FULL')]);
    const { members } = await stateOf([party.id]);
    expect(members).toHaveLength(4);
    const admitted = joiners.filter((_, i) => responses[i]?.statusCode === 200).map((j) => j.user.id);
    expect(members.map((m) => m.user_id).sort()).toEqual([leader.user.id, ...admitted].sort());
  });

  it('lets exactly one of a user’s concurrent creates and joins win', async () => {
    const [user, leaderA, leaderB] = await users(3);
    const [a, b] = [await createParty(leaderA, { open: true }), await createParty(leaderB, { open: true })];
    const responses = await Promise.all([
      call('POST', '/api/parties', user),
      call('POST', '/api/parties', user),
      call('POST', `/api/parties/${a.id}/join`, user),
      call('POST', `/api/parties/${b.id}/join`, user),
    ]);
    expect(outcomes(responses).filter((o) => o !== '409 ALREADY_IN_PARTY')).toHaveLength(1);
    expect(outcomes(responses).filter((o) => o === '409 ALREADY_IN_PARTY')).toHaveLength(3);
    const memberships = await queryRows(app().db, 'select party_id from party_members where user_id = ?', [
      user.user.id,
    ]);
    expect(memberships).toHaveLength(1);
    // A refused create left no party behind: the user's only party is the one they are in.
    const led = await queryRows(app().db, 'select id from parties where leader_id = ?', [user.user.id]);
    expect(led.length).toBeLessThanOrEqual(1);
    if (led.length === 1) expect(led[0]?.id).toBe(memberships[0]?.party_id);
  });

  it('keeps a party consistent when its leader leaves while a member joins', async () => {
    for (let round = 0; round < 5; round++) {
      const [leader, member, joiner] = await users(3);
      const party = await createParty(leader, { open: true });
      await joined(member, party.id);
      const [left, join] = await Promise.all([
        call('POST', `/api/parties/${party.id}/leave`, leader),
        call('POST', `/api/parties/${party.id}/join`, joiner),
      ]);
      expect([left.statusCode, join.statusCode]).toEqual([204, 200]);
      const [row] = await queryRows(app().db, 'select leader_id from parties where id = ?', [party.id]);
      // The longest-standing remaining member leads, whichever request went first.
      expect(row?.leader_id).toBe(member.user.id);
      const { members } = await stateOf([party.id]);
      expect(members.map((m) => m.user_id).sort()).toEqual([member.user.id, joiner.user.id].sort());
    }
  });

  it('ends a party of one or admits the joiner as its leader when the leader leaves during the join', async () => {
    for (let round = 0; round < 5; round++) {
      const [leader, joiner] = (await users(2)) as [TokenResponse, TokenResponse];
      const party = await createParty(leader, { open: true });
      const [left, join] = await Promise.all([
        call('POST', `/api/parties/${party.id}/leave`, leader),
        call('POST', `/api/parties/${party.id}/join`, joiner),
      ]);
      expect(left.statusCode).toBe(204);
      const state = await stateOf([party.id]);
      if (join.statusCode === 200) {
        expect(state.parties).toMatchObject([{ leader_id: joiner.user.id }]);
        expect(state.members.map((m) => m.user_id)).toEqual([joiner.user.id]);
      } else {
        expect([join.statusCode, join.json().code]).toEqual([404, 'NOT_FOUND']);
        expect(state).toEqual({ parties: [], members: [], invites: [] });
      }
    }
  });
});

describe('holding a party’s members (PartiesApi.holdMembers, for placing them together)', () => {
  const { call, users, partyOf } = partyCalls(app);
  const parties = () => (app().modules as unknown as { parties: PartiesApi }).parties;

  it('answers only those still members, and makes a member’s leave wait until the holding transaction ends', async ({
    skip,
  }) => {
    const [leader, member, gone, stranger] = await users(4);
    const party = await partyOf(leader, [member, gone]);
    expect((await call('POST', `/api/parties/${party.id}/leave`, gone)).statusCode).toBe(204);
    const ids = [leader, member, gone, stranger].map((user) => user.user.id);
    expect(await transaction(app().db.data, (tx) => parties().holdMembers(tx, party.id, ids))).toEqual(
      new Set([leader.user.id, member.user.id]),
    );
    // The embedded database runs one transaction at a time: no leave could run beside the hold.
    if (!process.env.DATABASE_URL) return skip();
    // The leave starts outside the holding transaction's callback, or it would join that transaction.
    let held!: () => void;
    let release!: () => void;
    const holding = new Promise<void>((resolve) => {
      held = resolve;
    });
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const holder = transaction(app().db.data, async (tx) => {
      await parties().holdMembers(tx, party.id, ids);
      held();
      await released;
    });
    await holding;
    let leaveAnswered = false;
    const leave = call('POST', `/api/parties/${party.id}/leave`, member).then((response) => {
      leaveAnswered = true;
      return response.statusCode;
    });
    // The leave reached its wait on the held row: Postgres shows its delete blocked on a lock.
    await vi.waitFor(
      async () => {
        const [row] = await executeBound<{ n: number }>(
          app().db.data,
          `select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock' and query like '%delete from party_members%'`,
          [],
        );
        expect(row?.n).toBe(1);
      },
      { timeout: 20_000, interval: 20 },
    );
    expect(leaveAnswered).toBe(false);
    release();
    await holder;
    expect(await leave).toBe(204);
  });
});
