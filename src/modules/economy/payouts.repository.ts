import type { PayoutState } from '../../../protocol/economy.js';
import { beforeTimeIdKey, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

/** SQL of creator payout requests (migration 0014). */

export interface PayoutRow {
  id: string;
  user_id: string | null;
  amount: string;
  state: PayoutState;
  note: string | null;
  decided_by: string | null;
  available_account_id: string;
  payout_account_id: string;
  created_at: Date;
  updated_at: Date;
  created_key: string;
}

const PAYOUT_COLUMNS = `p.id, p.user_id, p.amount::text as amount, p.state::text as state, p.note, p.decided_by,
  p.available_account_id, p.payout_account_id, p.created_at, p.updated_at,
  ${timeKeySql('p.created_at')} as created_key`;

export interface NewPayout {
  id: string;
  userId: string;
  amount: number;
  availableAccountId: string;
  payoutAccountId: string;
  at: Date;
}

const INSERT_PAYOUT = namedSql<NewPayout>(
  `with p as (
     insert into creator_payouts (id, user_id, amount, available_account_id, payout_account_id, created_at, updated_at)
     values (:id, :userId, :amount, :availableAccountId, :payoutAccountId, :at, :at) returning *
   ) select ${PAYOUT_COLUMNS} from p`,
);

export async function insertPayout(data: DataAccess, payout: NewPayout): Promise<PayoutRow> {
  const [row] = await executeNamed<PayoutRow, NewPayout>(data, INSERT_PAYOUT, payout);
  return row as PayoutRow;
}

export async function payoutById(
  data: DataAccess,
  id: string,
  forUpdate = false,
): Promise<PayoutRow | undefined> {
  const [row] = await executeBound<PayoutRow>(
    data,
    `select ${PAYOUT_COLUMNS} from creator_payouts p where p.id = $1${forUpdate ? ' for update' : ''}`,
    [id],
  );
  return row;
}

export async function decidePayout(
  data: DataAccess,
  id: string,
  decision: { state: PayoutState; note: string | null; adminId: string; at: Date },
): Promise<PayoutRow> {
  const [row] = await executeBound<PayoutRow>(
    data,
    `with p as (
       update creator_payouts set state = $2::payout_state, note = coalesce($3, note), decided_by = $4, updated_at = $5
       where id = $1 returning *
     ) select ${PAYOUT_COLUMNS} from p`,
    [id, decision.state, decision.note, decision.adminId, decision.at],
  );
  return row as PayoutRow;
}

/** A user's payout requests, newest first. */
export async function payoutsOf(
  data: DataAccess,
  userId: string,
  after: [string | null, string | null],
  limit: number,
): Promise<PayoutRow[]> {
  return executeBound<PayoutRow>(
    data,
    `select ${PAYOUT_COLUMNS} from creator_payouts p
     where p.user_id = $1 and ${beforeTimeIdKey('p.created_at', 'p.id')}
     order by p.created_at desc, p.id desc limit $4`,
    [userId, after[0], after[1], limit],
  );
}

/** The admins' queue: payout requests oldest first, optionally in one state. */
export async function payoutQueue(
  data: DataAccess,
  state: PayoutState | null,
  after: [string | null, string | null],
  limit: number,
): Promise<PayoutRow[]> {
  return executeBound<PayoutRow>(
    data,
    `select ${PAYOUT_COLUMNS} from creator_payouts p
     where ($1::payout_state is null or p.state = $1)
       and (p.created_at, p.id) > (coalesce($2::timestamptz, '-infinity'), coalesce($3::uuid, '00000000-0000-0000-0000-000000000000'))
     order by p.created_at, p.id limit $4`,
    [state, after[0], after[1], limit],
  );
}

/** What was paid out to a user over time. */
export async function paidOutTo(data: DataAccess, userId: string): Promise<number> {
  const [row] = await executeBound<{ total: string | null }>(
    data,
    `select sum(amount)::text as total from creator_payouts where user_id = $1 and state = 'paid'`,
    [userId],
  );
  return Number(row?.total ?? 0);
}
