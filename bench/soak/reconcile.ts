import pg from 'pg';
import type { Fault } from './chaos.js';
import type { Ledger, StreamKind } from './ledger.js';
import type { SoakUser } from './soak-user.js';

/**
 * The soak's reconciliation, from the load client's own records: the database against every
 * acknowledged write, each event against the users who should have received it, and the answers
 * that failed with a 5xx outside the fault windows.
 */

/** After a fault's part is back, its window stays open this long: clients retry and pools reconnect. */
export const RECOVERY_GRACE_MS = 5_000;

export interface StoredCheck {
  acknowledged: number;
  /** Acknowledged and in the database exactly once, as acknowledged. */
  storedOnce: number;
  /** Rows the soak wrote without learning it (the answer was lost, or a 5xx after the commit). */
  storedUnacknowledged: number;
}

export interface DeliveryCheck {
  /** (event, user who should have received it) pairs. */
  expected: number;
  received: number;
  /** Not received, but the user was told `recovered: false` after it was sent. */
  toldLost: number;
  missing: number;
  /** The missing ones by the fault window they were sent in ('no fault' outside them). */
  missingBySend: Record<string, number>;
  /** A few of the missing ones, for the report. */
  examples: string[];
}

export interface ServerErrorCheck {
  total: number;
  outsideFaults: number;
  byCode: Record<string, number>;
  /** Reasons the nodes logged for SERVICE_UNAVAILABLE answers outside the windows, counted. */
  reasonsOutside: Record<string, number>;
  examples: string[];
}

async function countStored(
  client: pg.Client,
  ids: string[],
  matching: string,
  idType: 'uuid' | 'bigint',
): Promise<number> {
  const { rows } = await client.query<{ stored: number }>(
    `select count(*)::int as stored from (
       select id from ${matching} and id = any($1::${idType}[]) group by id having count(*) = 1
     ) once`,
    [ids],
  );
  return rows[0]?.stored ?? 0;
}

export async function checkStored(databaseUrl: string, ledger: Ledger) {
  const client = new pg.Client(databaseUrl);
  await client.connect();
  try {
    const total = async (sql: string) => (await client.query<{ n: number }>(sql)).rows[0]?.n ?? 0;
    const dmIds = ledger.dms.map((dm) => dm.id);
    const chatIds = ledger.chats.map((chat) => chat.id);
    const dms: StoredCheck = {
      acknowledged: dmIds.length,
      storedOnce: await countStored(client, dmIds, 'messages where conversation_id is not null', 'uuid'),
      storedUnacknowledged:
        (await total('select count(*)::int as n from messages where conversation_id is not null')) -
        dmIds.length,
    };
    const chats: StoredCheck = {
      acknowledged: chatIds.length,
      storedOnce: await countStored(client, chatIds, 'messages where world_id is not null', 'uuid'),
      storedUnacknowledged:
        (await total('select count(*)::int as n from messages where world_id is not null')) - chatIds.length,
    };
    // A revision id is the table's key: stored once means present, in the chunk it was written to.
    const { rows } = await client.query<{ id: string; room_id: string; x: number }>(
      'select id::text, room_id::text, x from chunk_revisions where id = any($1::bigint[])',
      [ledger.revisions.map((revision) => revision.revision)],
    );
    const found = new Map(rows.map((row) => [row.id, row]));
    const revisions: StoredCheck = {
      acknowledged: ledger.revisions.length,
      storedOnce: ledger.revisions.filter((revision) => {
        const row = found.get(String(revision.revision));
        return row?.room_id === revision.roomId && row.x === revision.x;
      }).length,
      storedUnacknowledged:
        (await total('select count(*)::int as n from chunk_revisions')) - ledger.revisions.length,
    };
    return { dms, chats, revisions };
  } finally {
    await client.end();
  }
}

/** Every acknowledged DM to its sender and recipient, every chat message to its world's members. */
export function checkDelivery(ledger: Ledger, users: readonly SoakUser[], faults: readonly Fault[]) {
  const members = new Map<string, string[]>();
  for (const user of users) members.set(user.worldId, [...(members.get(user.worldId) ?? []), user.id]);
  const tally = (
    events: { id: string; sentAt: number; to: string[] }[],
    stream: StreamKind,
  ): DeliveryCheck => {
    const check: DeliveryCheck = {
      expected: 0,
      received: 0,
      toldLost: 0,
      missing: 0,
      missingBySend: {},
      examples: [],
    };
    for (const event of events) {
      for (const userId of event.to) {
        check.expected++;
        if (ledger.received.get(userId)?.has(event.id)) check.received++;
        else if (ledger.wasToldLost(userId, stream, event.sentAt)) check.toldLost++;
        else {
          check.missing++;
          const window = faultAt(faults, event.sentAt)?.what ?? 'no fault';
          check.missingBySend[window] = (check.missingBySend[window] ?? 0) + 1;
          if (check.examples.length < 5)
            check.examples.push(`${event.id} to ${userId} (sent at ${(event.sentAt / 1000).toFixed(1)} s)`);
        }
      }
    }
    return check;
  };
  return {
    dms: tally(
      ledger.dms.map((dm) => ({ id: dm.id, sentAt: dm.sentAt, to: [dm.senderId, dm.recipientId] })),
      'user',
    ),
    chats: tally(
      ledger.chats.map((chat) => ({ id: chat.id, sentAt: chat.sentAt, to: members.get(chat.worldId) ?? [] })),
      'chat',
    ),
  };
}

/** The fault whose window (grace included) holds `at`, if any. */
function faultAt(faults: readonly Fault[], at: number): Fault | undefined {
  return faults.find((fault) => at >= fault.from && at <= fault.to + RECOVERY_GRACE_MS);
}

export function checkServerErrors(ledger: Ledger, faults: readonly Fault[]): ServerErrorCheck {
  const outside = ledger.serverErrors.filter((error) => !faultAt(faults, error.at));
  const byCode: Record<string, number> = {};
  for (const error of ledger.serverErrors) byCode[error.code] = (byCode[error.code] ?? 0) + 1;
  const reasonsOutside: Record<string, number> = {};
  for (const { at, reason } of ledger.unavailableReasons) {
    if (!faultAt(faults, at)) reasonsOutside[reason] = (reasonsOutside[reason] ?? 0) + 1;
  }
  return {
    total: ledger.serverErrors.length,
    outsideFaults: outside.length,
    byCode,
    reasonsOutside,
    examples: outside
      .slice(0, 5)
      .map((error) => `${error.what} ${error.code} at ${(error.at / 1000).toFixed(1)} s`),
  };
}
