import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { Party } from '../../protocol/parties.js';
import { OfflineSweep, SWEEP_TURN_KEY } from '../../src/modules/parties/offline-sweep.js';
import type { Departure, PartyEvents } from '../../src/modules/parties/party-events.js';
import { presenceKey } from '../../src/modules/presence/presence.service.js';
import type { DataAccess } from '../../src/platform/data-access.js';
import { bearer, heartbeat, registerUser } from '../helpers/accounts.js';
import { buildTestCluster, type TestApp, type TestCluster, useTestApp } from '../helpers/app.js';
import { queryRows, recordingData, rowsRead } from '../helpers/database.js';
import { authedSocket, openedSockets, type ReceivedFrame, type TestSocket } from '../helpers/ws-client.js';
import { partyCalls } from './parties.js';

/** How long a test waits for a sweep's removal: far past a 1 s grace and the 5 s it may take on top. */
const DEADLINE = { timeout: 20_000, interval: 100 };

const membersOf = (frame: ReceivedFrame) =>
  ((frame.d as { party: Party }).party.members ?? []).map((member) => member.user_id);

/** The party's member rows, longest-standing first, with what the sweeps recorded of each. */
function memberRows(app: TestApp, partyId: string) {
  return queryRows<{ user_id: string; offline: boolean; since_join: boolean | null }>(
    app.db,
    `select user_id, offline_since is not null as offline, offline_since >= joined_at as since_join
     from party_members where party_id = ? order by joined_at, user_id`,
    [partyId],
  );
}

describe('removing offline members', () => {
  const app = useTestApp({ PARTY_OFFLINE_GRACE_SECONDS: 1 });
  const sockets = openedSockets(() => app().wsUrl);
  const { expectStatus, users, createParty, joined, stateOf } = partyCalls(app);
  afterAll(() => sockets.closeAll());

  it('removes a member offline for the grace as a leave: the longest-standing online member leads', async () => {
    // The leader uses REST alone and sends no heartbeat: offline for the presence store.
    const [leader, member] = await users(2);
    // Hidden from everyone, the member is online for the rule all the same.
    await expectStatus(200, 'PUT', '/api/profile/me', member, { privacy: { presence_visibility: 'nobody' } });
    const memberSocket = await sockets.open(member.access_token);
    const party = await createParty(leader, { open: true });
    await joined(member, party.id);
    const update = await memberSocket.next(
      (f) => f.t === 'party.updated' && membersOf(f).length === 1,
      DEADLINE.timeout,
    );
    expect((update.d as { party: Party }).party).toMatchObject({
      leader_id: member.user.id,
      members: [{ user_id: member.user.id }],
    });
    expect((await expectStatus(200, 'GET', `/api/parties/${party.id}`, member)).json().leader_id).toBe(
      member.user.id,
    );
  });

  it('ends a party whose last member stays offline', async () => {
    const [loner] = await users(1);
    const party = await createParty(loner);
    await vi.waitFor(async () => expect((await stateOf([party.id])).parties).toEqual([]), DEADLINE);
    expect((await stateOf([party.id], [loner.user.id])).members).toEqual([]);
  });

  it('stops the clock of a member who comes back online', async () => {
    const [leader, returning, absent] = await users(3);
    await sockets.open(leader.access_token);
    const party = await createParty(leader, { open: true });
    const first = await sockets.open(returning.access_token);
    await joined(returning, party.id);
    first.close();
    await vi.waitFor(async () => {
      const row = (await memberRows(app(), party.id)).find((r) => r.user_id === returning.user.id);
      expect(row?.offline).toBe(true);
    }, DEADLINE);
    await sockets.open(returning.access_token);
    await vi.waitFor(async () => {
      const row = (await memberRows(app(), party.id)).find((r) => r.user_id === returning.user.id);
      expect(row?.offline).toBe(false);
    }, DEADLINE);
    // A member who joins now and stays offline is due later than the returning member would have been.
    await joined(absent, party.id);
    await vi.waitFor(async () => {
      const ids = (await memberRows(app(), party.id)).map((r) => r.user_id);
      expect(ids).not.toContain(absent.user.id);
    }, DEADLINE);
    expect((await memberRows(app(), party.id)).map((r) => r.user_id)).toEqual([
      leader.user.id,
      returning.user.id,
    ]);
  });
});

/** One app for the two parts below that need a grace no test waits out. */
const longGraceApp = useTestApp({ PARTY_OFFLINE_GRACE_SECONDS: 30 });

describe('absences presence did not tell', () => {
  const app = longGraceApp;
  const { users, createParty, joined } = partyCalls(app);

  it('are found by the walk over the memberships', async () => {
    const [leader, member] = await users(2);
    await heartbeat(app(), member.access_token);
    const party = await createParty(leader, { open: true });
    await joined(member, party.id);
    const memberRow = async () =>
      (await memberRows(app(), party.id)).find((row) => row.user_id === member.user.id);
    // Online: a pass clears the mark the join set.
    await vi.waitFor(async () => expect((await memberRow())?.offline).toBe(false), DEADLINE);
    // The key gone without presence ending it (a lapse whose heartbeat's node died): no one tells.
    await app().kv.del(presenceKey(member.user.id));
    await vi.waitFor(async () => expect((await memberRow())?.offline).toBe(true), DEADLINE);
  });
});

describe('the offline clock', () => {
  const app = longGraceApp;
  const { users, createParty, joined } = partyCalls(app);

  it('runs from the join for a member who was offline before joining', async () => {
    const [leader, member] = await users(2);
    const party = await createParty(leader, { open: true });
    await joined(member, party.id);
    await vi.waitFor(async () => {
      const rows = await memberRows(app(), party.id);
      expect(rows.map((row) => row.offline)).toEqual([true, true]);
    }, DEADLINE);
    expect((await memberRows(app(), party.id)).map((row) => row.since_join)).toEqual([true, true]);
  });
});

describe('offline removal with two nodes sweeping one database', () => {
  let cluster: TestCluster;
  const opened: TestSocket[] = [];

  beforeAll(async () => {
    cluster = await buildTestCluster(2, { PARTY_OFFLINE_GRACE_SECONDS: 1 });
  });
  afterAll(async () => {
    for (const socket of opened) socket.close();
    await cluster?.close();
  });

  const nodeAt = (index: number) => {
    const node = cluster.nodes[index];
    if (!node) throw new Error(`no node ${index}`);
    return node;
  };

  const call = async (node: number, method: string, url: string, user: TokenResponse, payload?: object) => {
    const response = await nodeAt(node).http.inject({
      method: method as 'POST',
      url,
      headers: bearer(user.access_token),
      ...(payload ? { payload } : {}),
    });
    expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    return response.json();
  };

  it('removes an offline member once, whichever node sweeps first', async () => {
    const [leader, member, absent] = [
      await registerUser(nodeAt(0)),
      await registerUser(nodeAt(0)),
      await registerUser(nodeAt(1)),
    ] as [TokenResponse, TokenResponse, TokenResponse];
    const leaderSocket = await authedSocket(nodeAt(0).wsUrl, leader.access_token);
    const memberSocket = await authedSocket(nodeAt(1).wsUrl, member.access_token);
    opened.push(leaderSocket, memberSocket);
    const party: Party = await call(0, 'POST', '/api/parties', leader, { open: true });
    await call(1, 'POST', `/api/parties/${party.id}/join`, member);
    await call(1, 'POST', `/api/parties/${party.id}/join`, absent);
    const offset = (f: ReceivedFrame) => (f.pos as { offset: number }).offset;
    const withAbsent = (f: ReceivedFrame) => f.t === 'party.updated' && membersOf(f).includes(absent.user.id);
    const joinedAt = new Map<TestSocket, number>();
    // After the absent member's join (a later offset), an update without them: their removal.
    const removal = (socket: TestSocket) => (f: ReceivedFrame) =>
      f.t === 'party.updated' &&
      offset(f) > (joinedAt.get(socket) ?? Number.POSITIVE_INFINITY) &&
      !membersOf(f).includes(absent.user.id);
    for (const socket of [leaderSocket, memberSocket]) {
      joinedAt.set(socket, offset(await socket.next(withAbsent)));
      await socket.next(removal(socket), DEADLINE.timeout);
    }
    // A later change's event comes after any second removal event would have: there is none.
    await call(0, 'PATCH', `/api/parties/${party.id}`, leader, { max_size: 5 });
    for (const socket of [leaderSocket, memberSocket]) {
      await socket.next((f) => f.t === 'party.updated' && (f.d as { party: Party }).party.max_size === 5);
      expect(socket.frames.filter(removal(socket))).toEqual([]);
    }
    const rows = await memberRows(nodeAt(0) as TestApp, party.id);
    expect(rows.map((row) => row.user_id)).toEqual([leader.user.id, member.user.id]);
  });
});

describe('sweeps run by hand', () => {
  const app = useTestApp();
  const { users, createParty, joined, invited, stateOf } = partyCalls(app);
  const recording = (departures: Departure[]) =>
    ({ departed: async (_log: unknown, d: Departure) => void departures.push(d) }) as unknown as PartyEvents;
  const sweepOn = (
    events: PartyEvents,
    aheadMs: number,
    data: () => DataAccess = () => app().db.data,
    walkPage?: number,
  ) =>
    new OfflineSweep({
      data,
      kv: app().kv,
      presence: app().modules.presence,
      events,
      log: app().log,
      graceSeconds: 60,
      clock: () => new Date(Date.now() + aheadMs),
      ...(walkPage ? { walkPage } : {}),
    });

  it('run no statement on a node that did not take the turn', async () => {
    // Another node's turn: this app's own sweep stays idle meanwhile too.
    await app().kv.set(SWEEP_TURN_KEY, 'another node', { ttlMs: 60_000 });
    try {
      const { handle, ran } = recordingData(() => app().db.data);
      await sweepOn(recording([]), 0, () => handle).runOnce();
      expect(ran).toEqual([]);
    } finally {
      await app().kv.del(SWEEP_TURN_KEY);
    }
  });

  it('read only the walk’s page (and prune invitations) while nobody is in a party', async () => {
    const { handle, ran } = recordingData(() => app().db.data);
    await sweepOn(recording([]), 0, () => handle).sweep();
    const statements = ran.map((statement) => statement.sql.replace(/\s+/g, ' ').trim());
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(/^select user_id, offline_since is not null as offline from party_members/);
    expect(statements[1]).toMatch(/^delete from party_invites/);
  });

  it('read the offline members and one page of the others, however many members are online', async () => {
    const db = app().db;
    const online = Array.from({ length: 2000 }, () => randomUUID());
    await queryRows(
      db,
      `with u as (
         insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
         select id, 'w' || left(replace(id::text, '-', ''), 20), 'x', now(), now() from unnest(?::uuid[]) as id
         returning id
       ), p as (
         insert into parties (id, leader_id, open, max_size, created_at)
         select gen_random_uuid(), id, true, 8, now() from u returning id, leader_id
       )
       insert into party_members (party_id, user_id, joined_at) select id, leader_id, now() from p`,
      [`{${online.join(',')}}`],
    );
    await app().kv.msetWithTtl(
      online.map((id) => [presenceKey(id), String(Date.now())]),
      60_000,
    );
    // Two members who never came online: offline since their joins, not due for a minute.
    const absent = await users(2);
    for (const user of absent) await createParty(user);
    await queryRows(db, 'analyze party_members');
    const [{ members, offline } = { members: 0, offline: 0 }] = await queryRows<{
      members: number;
      offline: number;
    }>(
      db,
      `select count(*)::int as members, (count(*) filter (where offline_since is not null))::int as offline
       from party_members`,
    );
    expect(members).toBeGreaterThanOrEqual(2002);
    expect(offline).toBeGreaterThanOrEqual(2);

    const { handle, ran } = recordingData(() => app().db.data);
    await sweepOn(recording([]), 0, () => handle, 50).sweep();
    const reads = ran.filter((statement) => statement.sql.trimStart().startsWith('select'));
    let read = 0;
    for (const statement of reads) read += await rowsRead(db.data, statement, 'party_members');
    // The walk's page and the offline members: not the 2000 online.
    expect(read).toBeGreaterThanOrEqual(offline);
    expect(read).toBeLessThanOrEqual(50 + offline);
  });

  it('delete the invitations that expired, and only those', async () => {
    const [leader, late, pending] = await users(3);
    // Online, so that the sweep whose clock is far ahead keeps the party.
    await heartbeat(app(), leader.access_token);
    const party = await createParty(leader);
    await invited(leader, party.id, late);
    // An invitation of PARTY_INVITE_TTL_SECONDS (600) has expired for a clock 700 s ahead.
    await sweepOn(recording([]), 700_000).sweep();
    await invited(leader, party.id, pending);
    expect((await stateOf([party.id])).invites.map((row) => row.user_id)).toEqual([pending.user.id]);
  });

  it('of one due member remove each member once and end the party once, however they interleave', async () => {
    const [leader, member] = await users(2);
    const party = await createParty(leader, { open: true });
    await joined(member, party.id);
    const departures: Departure[] = [];
    const events = recording(departures);
    // One pass sees both offline; then three whose clock is two graces ahead find both due at once.
    await sweepOn(events, 0).sweep();
    expect(departures).toEqual([]);
    await Promise.all([0, 1, 2].map(() => sweepOn(events, 120_000).sweep()));
    expect(departures.map((d) => d.userId).sort()).toEqual([leader.user.id, member.user.id].sort());
    expect(departures.filter((d) => d.ended)).toHaveLength(1);
    expect(await stateOf([party.id])).toEqual({ parties: [], members: [], invites: [] });
  });
});
