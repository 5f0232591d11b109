import { createHash } from 'node:crypto';
import type { AccountKind } from '../../../protocol/economy.js';
import { AppError, ErrorCode } from '../../platform/errors.js';

/**
 * Ledger accounts are named, not looked up: a user's account of a kind has an id derived from the
 * user and the kind (a UUID of version 8, RFC 9562's custom kind), and the platform's three have
 * fixed ids inserted by migration 0013. A posting can so name every account it touches without a
 * read. The write that first needs a user's account makes it (ensureAccounts): a grant the wallet,
 * a listing its seller's creator_pending and creator_available, a payout request creator_payout.
 */
export type UserAccountKind = Exclude<AccountKind, PlatformAccountKind>;
export type PlatformAccountKind = 'platform_issuance' | 'platform_revenue' | 'platform_payouts';

export const USER_ACCOUNT_KINDS: readonly UserAccountKind[] = [
  'wallet',
  'creator_pending',
  'creator_available',
  'creator_payout',
];

export const PLATFORM_ACCOUNT_IDS: Record<PlatformAccountKind, string> = {
  platform_issuance: '00000000-0000-8000-8000-000000000001',
  platform_revenue: '00000000-0000-8000-8000-000000000002',
  platform_payouts: '00000000-0000-8000-8000-000000000003',
};

export function isPlatformAccount(kind: AccountKind): kind is PlatformAccountKind {
  return kind in PLATFORM_ACCOUNT_IDS;
}

/** The id of a user's account of one kind, whether or not it exists yet. */
export function userAccountId(userId: string, kind: UserAccountKind): string {
  const hash = createHash('sha256').update(`atrium-account:${userId.toLowerCase()}:${kind}`).digest();
  hash[6] = ((hash[6] as number) & 0x0f) | 0x80;
  hash[8] = ((hash[8] as number) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * `userAccountId` spelled in SQL, for a statement that learns the user as it runs (a sale names
 * its seller's accounts from the listing it reads): `userSql` is the SQL expression of the user's
 * id. Its colons stand alone in their literals, so neither a named statement (named-sql.ts) nor
 * pgbench takes them for a parameter.
 */
export function userAccountIdSql(userSql: string, kind: UserAccountKind): string {
  return `(select (substr(h, 1, 12) || '8' || substr(h, 14, 3) || to_hex(8 + (('x' || substr(h, 17, 1))::bit(4)::int & 3)) || substr(h, 18, 15))::uuid
    from (select encode(sha256(convert_to('atrium-account' || ':' || lower((${userSql})::text) || ':' || '${kind}', 'UTF8')), 'hex') as h) x)`;
}

/** An account as a posting names it: enough to create it when it does not exist yet. */
export interface AccountRef {
  id: string;
  userId: string | null;
  kind: AccountKind;
}

export function userAccount(userId: string, kind: UserAccountKind): AccountRef {
  return { id: userAccountId(userId, kind), userId, kind };
}

export function platformAccount(kind: PlatformAccountKind): AccountRef {
  return { id: PLATFORM_ACCOUNT_IDS[kind], userId: null, kind };
}

/** The refusal of a movement the account does not hold enough for, with what it holds and needs. */
export const insufficientFunds = (balance: number, required: number) =>
  new AppError(ErrorCode.INSUFFICIENT_FUNDS, 'The account does not hold enough for this.', {
    details: { balance, required },
  });
