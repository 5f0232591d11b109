import type { z } from 'zod';
import {
  type AccountKind,
  CURRENCY,
  type creatorBalanceSchema,
  type grantSchema,
  type settingsSchema,
  type Transaction,
  type walletSchema,
} from '../../../protocol/economy.js';
import {
  adminGrant,
  VERIFY_DIFFERENCES_SHOWN,
  type verifyReportSchema,
} from '../../../protocol/economy-admin.js';
import type { EventBus } from '../../platform/bus.js';
import { type Ctx, callerOf, hasRole, requireRole } from '../../platform/context.js';
import { decodeCursor, isTimeIdKey, pageFrom, timeIdKeyParams } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { wasReplayed } from '../../platform/idempotency.js';
import { canonicalId, idOr } from '../../platform/ids.js';
import type { LogSink } from '../../platform/log.js';
import type { AuditActor, AuditApi } from '../audit/index.js';
import type { UsersApi } from '../users/index.js';
import {
  isPlatformAccount,
  PLATFORM_ACCOUNT_IDS,
  platformAccount,
  USER_ACCOUNT_KINDS,
  type UserAccountKind,
  userAccount,
  userAccountId,
} from './accounts.js';
import { type ExtensionActor, type ExtensionGrant, extensionGrantInput } from './extension-grant.js';
import type { ClaimedKey, IdempotentWrites, KeyedInput, Outcome } from './idempotency.js';
import {
  accountsById,
  type EntryRow,
  ensureAccounts,
  entriesOf,
  lockAccounts,
  post,
  transactionById,
} from './ledger.repository.js';
import { paidOutTo } from './payouts.repository.js';
import { nextReleaseOf } from './purchases.repository.js';
import { verifyLedger } from './verify.js';
import { balanceAnnouncements, toEntry, toOthersEntry } from './views.js';

export interface WalletDeps {
  writes: IdempotentWrites;
  bus: EventBus;
  /** Who may be granted currency: an account that exists. */
  users: Pick<UsersApi, 'existingUserIds'>;
  settings: z.infer<typeof settingsSchema>;
  /** Grants are recorded in the audit log, in their transaction. */
  audit: Pick<AuditApi, 'record'>;
}

type Page = { limit: number; cursor?: string | undefined };

const noSuchUser = () => new AppError(ErrorCode.NOT_FOUND, 'No such user.');
const noSuchTransaction = () => new AppError(ErrorCode.NOT_FOUND, 'No such transaction.');
const ISSUANCE = platformAccount('platform_issuance');
/** What begins an extension grant's fingerprint: the one write under an extension's keys. */
const EXTENSION_GRANT = 'extension.economy.grant';

/** Wallets, ledger reads, creator balances and admin grants. */
export class WalletService {
  constructor(private readonly deps: WalletDeps) {}

  settings(ctx: Ctx): z.infer<typeof settingsSchema> {
    callerOf(ctx);
    return this.deps.settings;
  }

  async wallet(ctx: Ctx): Promise<z.infer<typeof walletSchema>> {
    const me = callerOf(ctx).id;
    const id = userAccountId(me, 'wallet');
    const account = (await accountsById(ctx.data, [id])).get(id);
    return {
      user_id: me,
      currency: CURRENCY,
      balance: account?.balance ?? 0,
      updated_at: account?.updatedAt ? account.updatedAt.toISOString() : null,
    };
  }

  /** The caller's entries, newest first, of all their accounts or one. */
  async ledger(ctx: Ctx, query: Page & { account?: UserAccountKind | undefined }) {
    const me = callerOf(ctx).id;
    const kinds = query.account ? [query.account] : USER_ACCOUNT_KINDS;
    return this.entriesPage(
      ctx,
      kinds.map((kind) => userAccountId(me, kind)),
      query,
    );
  }

  /** Admins: a user's entries (optionally one account), or a platform account's. */
  async adminLedger(
    ctx: Ctx,
    query: Page & { user_id?: string | undefined; account?: AccountKind | undefined },
  ) {
    requireRole(ctx, 'admin');
    const { account } = query;
    if (query.user_id === undefined) {
      if (account === undefined || !isPlatformAccount(account)) {
        throw new AppError(ErrorCode.VALIDATION_FAILED, 'Name a user, or a platform account.', {
          errors: [{ path: 'user_id', message: 'is required unless account names a platform account' }],
        });
      }
      return this.entriesPage(ctx, [PLATFORM_ACCOUNT_IDS[account]], query);
    }
    if (account !== undefined && isPlatformAccount(account)) {
      throw new AppError(ErrorCode.VALIDATION_FAILED, 'Platform accounts belong to no user.', {
        errors: [{ path: 'account', message: 'must be a user account when user_id is given' }],
      });
    }
    const userId = canonicalId(query.user_id);
    const kinds = account ? [account] : USER_ACCOUNT_KINDS;
    return this.entriesPage(
      ctx,
      kinds.map((kind) => userAccountId(userId, kind)),
      query,
    );
  }

  /**
   * A transaction with its entries: to admins, and to owners of one of its accounts (404 to others),
   * who see whose account and its balance after only on their own entries.
   */
  async transaction(ctx: Ctx, transactionId: string): Promise<Transaction> {
    const caller = callerOf(ctx);
    const admin = hasRole(caller, 'admin');
    const own = (entry: EntryRow) => entry.user_id === caller.id;
    const found = await transactionById(ctx.data, idOr(transactionId, noSuchTransaction));
    if (!found || (!admin && !found.entries.some(own))) throw noSuchTransaction();
    const { tx, entries } = found;
    return {
      id: tx.id,
      kind: tx.kind,
      created_at: new Date(tx.created_at).toISOString(),
      purchase_id: tx.purchase_id,
      payout_id: tx.payout_id,
      // A buyer learns neither who the seller's account belongs to nor its balance, nor the platform's revenue.
      entries: entries.map((entry) => (admin || own(entry) ? toEntry(entry) : toOthersEntry(entry))),
    };
  }

  async creatorBalance(ctx: Ctx): Promise<z.infer<typeof creatorBalanceSchema>> {
    const me = callerOf(ctx).id;
    const ids = {
      pending: userAccountId(me, 'creator_pending'),
      available: userAccountId(me, 'creator_available'),
      inPayout: userAccountId(me, 'creator_payout'),
    };
    const [accounts, paidOut, nextRelease] = await Promise.all([
      accountsById(ctx.data, Object.values(ids)),
      paidOutTo(ctx.data, me),
      nextReleaseOf(ctx.data, me),
    ]);
    const balance = (id: string) => accounts.get(id)?.balance ?? 0;
    return {
      user_id: me,
      currency: CURRENCY,
      pending: balance(ids.pending),
      available: balance(ids.available),
      in_payout: balance(ids.inPayout),
      paid_out: paidOut,
      next_release_at: nextRelease ? new Date(nextRelease).toISOString() : null,
    };
  }

  /** Admins: credits a user's wallet from the issuance account (the one account allowed below zero). */
  grant(
    ctx: Ctx,
    input: KeyedInput & { user_id: string; amount: number; reason: string },
  ): Promise<z.infer<typeof grantSchema>> {
    const admin = requireRole(ctx, 'admin');
    const userId = idOr(input.user_id, noSuchUser);
    const { amount, reason } = input;
    return this.deps.writes.runOnce(ctx, adminGrant, input, (tx, key) =>
      this.credit(
        tx,
        key,
        { userId, amount, reason, at: ctx.now(), actor: { kind: 'user', id: admin.id } },
        ctx.log,
      ),
    );
  }

  /**
   * An extension's `ctx.economy.grant`: the admin grant's transaction, audited with the extension
   * as its actor and the key in the entry. Keys are the extension's, whoever the grant names; the
   * user's id is taken in its one spelling, so the same user is the same request under the key.
   */
  async grantAs(
    data: DataAccess,
    actor: ExtensionActor,
    input: unknown,
    log: Pick<LogSink, 'warn'>,
  ): Promise<ExtensionGrant> {
    const request = extensionGrantInput(input);
    const userId = idOr(request.user_id, noSuchUser);
    const { amount, reason, idempotency_key } = request;
    const scope = { data, owner: { kind: 'extension', name: actor.name } as const, now: new Date() };
    const keyed = { ...request, user_id: userId };
    const answer = await this.deps.writes.runOnceAs(scope, EXTENSION_GRANT, keyed, (tx, key) =>
      this.credit(tx, key, { userId, amount, reason, at: scope.now, actor, noted: { idempotency_key } }, log),
    );
    return { ...answer, replayed: wasReplayed(answer) };
  }

  /**
   * A grant's ledger transaction under its claimed key: issuance -amount, wallet +amount, its
   * audit entry (`noted`: what `after` records besides the transaction, amount and reason), and the
   * user's `economy.balance` event once it committed.
   */
  private async credit(
    tx: DataAccess,
    key: ClaimedKey,
    grant: {
      userId: string;
      amount: number;
      reason: string;
      at: Date;
      actor: AuditActor;
      noted?: Record<string, unknown>;
    },
    log: Pick<LogSink, 'warn'>,
  ): Promise<Outcome<z.infer<typeof grantSchema>>> {
    const { userId, amount, reason, at, actor } = grant;
    const wallet = userAccount(userId, 'wallet');
    // Read rather than left to the wallet's foreign key: a deleted user's wallet stays, ownerless.
    if ((await this.deps.users.existingUserIds(tx, [userId])).length === 0) throw noSuchUser();
    await ensureAccounts(tx, [wallet], at);
    await lockAccounts(tx, [wallet.id, ISSUANCE.id]);
    const { transactionId, entries } = await post(
      tx,
      // The transaction's actor_id is an account's; an extension is named by the audit entry alone.
      { kind: 'grant', ...(actor.kind === 'user' ? { actorId: actor.id } : {}), reason, at },
      [
        { accountId: ISSUANCE.id, kind: 'grant', amount: -amount },
        { accountId: wallet.id, kind: 'grant', amount },
      ],
    );
    const credited = entries.find((entry) => entry.account_id === wallet.id);
    await this.deps.audit.record(tx, {
      actor,
      action: 'economy.grant',
      target: { type: 'user', id: userId },
      after: { transaction_id: transactionId, amount, reason, ...grant.noted },
    });
    return {
      answer: await key.store({
        transaction_id: transactionId,
        user_id: userId,
        amount,
        currency: CURRENCY,
        balance: Number(credited?.balance_after ?? 0),
      }),
      afterCommit: () => this.deps.bus.publishAllCommitted(balanceAnnouncements(entries), log),
    };
  }

  /** Admins: the CLI's `economy verify`, its first differences and their count. */
  async verify(ctx: Ctx): Promise<z.infer<typeof verifyReportSchema>> {
    requireRole(ctx, 'admin');
    const differences = await verifyLedger(ctx.data);
    return {
      ok: differences.length === 0,
      verified_at: ctx.now().toISOString(),
      difference_count: differences.length,
      differences: differences.slice(0, VERIFY_DIFFERENCES_SHOWN),
    };
  }

  private async entriesPage(ctx: Ctx, accountIds: string[], query: Page) {
    const after = decodeCursor(query.cursor, isTimeIdKey);
    const rows = await entriesOf(ctx.data, accountIds, timeIdKeyParams(after), query.limit + 1);
    return pageFrom(rows, query.limit, toEntry, (row) => [row.created_key, row.id]);
  }
}
