import type { AccountKind, EntryKind } from '../../protocol/economy.js';

/**
 * What the economy must hold after every acknowledged write, kept by the simulation from the
 * answers it got (docs/economy.md, "Seeded simulation"). Entities live in slots: a slot is made
 * when the driver first asks for the entity, so slot numbers depend on the seed alone, and its id
 * is filled in when the service answers the creation (a refused creation leaves it null).
 */

export type UserAccount = 'wallet' | 'creator_pending' | 'creator_available' | 'creator_payout';
export type PlatformAccount = 'platform_issuance' | 'platform_revenue' | 'platform_payouts';
export type ItemState = 'draft' | 'published' | 'retired';
export type ListingState = 'active' | 'sold' | 'cancelled';
export type PayoutState = 'requested' | 'approved' | 'paid' | 'rejected';

export interface SimUser {
  ix: number;
  id: string;
  username: string;
  token: string;
  admin: boolean;
  accounts: Record<UserAccount, number>;
  paidOut: number;
  /** Units held, by item id. */
  inventory: Record<string, number>;
}

export interface ItemSlot {
  slot: number;
  creator: number;
  consumable: boolean;
  id: string | null;
  state: ItemState;
}

export interface ListingSlot {
  slot: number;
  seller: number;
  item: number;
  price: number;
  quantity: number | null;
  id: string | null;
  state: ListingState;
  soldCount: number;
}

export interface PurchaseSlot {
  slot: number;
  buyer: number;
  listing: number;
  id: string | null;
  seller: number;
  itemId: string;
  price: number;
  fee: number;
  sellerAmount: number;
  holdUntil: number;
  state: 'completed' | 'refunded';
  released: boolean;
  /** The first answer, which the purchase keeps but for its state and refund transaction. */
  answer: Record<string, unknown> | null;
  transactionId: string | null;
  refundTransactionId: string | null;
  releaseTransactionId: string | null;
}

export interface PayoutSlot {
  slot: number;
  user: number;
  amount: number;
  id: string | null;
  state: PayoutState;
  /** The last note a decision gave (a decision without one keeps it). */
  note: string | null;
  /** The entries of each ledger transaction the payout made, in order. */
  moves: ExpectedEntry[][];
}

/** One ledger entry as the model expects it: `user` null on the platform's accounts. */
export interface ExpectedEntry {
  account: AccountKind;
  user: number | null;
  kind: EntryKind;
  amount: number;
}

export interface StoredAnswer {
  fingerprint: string;
  status: number;
  body: unknown;
}

export interface Settings {
  feeBps: number;
  holdMs: number;
  payoutMinimum: number;
}

/** Ids of rows the service made, in the order the model learned them, for the per-step window checks. */
export type RowKind = 'item' | 'listing' | 'purchase' | 'payout' | 'transaction';

interface MutableState {
  users: SimUser[];
  items: ItemSlot[];
  listings: ListingSlot[];
  purchases: PurchaseSlot[];
  payouts: PayoutSlot[];
  platform: Record<PlatformAccount, number>;
  transactionsByKind: Record<string, number>;
}

export interface Snapshot {
  state: MutableState;
  keys: number;
  transactions: number;
  rows: number;
}

export class Model {
  users: SimUser[] = [];
  items: ItemSlot[] = [];
  listings: ListingSlot[] = [];
  purchases: PurchaseSlot[] = [];
  payouts: PayoutSlot[] = [];
  platform: Record<PlatformAccount, number> = {
    platform_issuance: 0,
    platform_revenue: 0,
    platform_payouts: 0,
  };
  transactionsByKind: Record<string, number> = {};
  /** Stored answers by `${user index}|${key}`: what a retry with the key must replay. */
  readonly keys = new Map<string, StoredAnswer>();
  /** The entries of every ledger transaction the model knows by id (all but payouts'). */
  readonly transactions = new Map<string, { kind: EntryKind; entries: ExpectedEntry[] }>();
  /** Rows the service made, in the order the model learned of them (`at`, ms): a row's id was minted before. */
  readonly rows: { kind: RowKind; id: string; at: number }[] = [];
  readonly userByUuid = new Map<string, number>();
  /** Completed purchases whose hold the model has not seen released (the release job works unseen). */
  private readonly held = new Set<PurchaseSlot>();
  /** Answers that timing decided (a refund as its hold ended, a payout as holds came due), for the summary. */
  readonly decidedByTiming = { refunds: 0, payouts: 0 };

  constructor(readonly settings: Settings) {}

  addUser(user: Omit<SimUser, 'ix' | 'accounts' | 'paidOut' | 'inventory'>): SimUser {
    const added: SimUser = {
      ...user,
      ix: this.users.length,
      accounts: { wallet: 0, creator_pending: 0, creator_available: 0, creator_payout: 0 },
      paidOut: 0,
      inventory: {},
    };
    this.users.push(added);
    this.userByUuid.set(user.id, added.ix);
    return added;
  }

  user(ix: number): SimUser {
    const user = this.users[ix];
    if (!user) throw new Error(`no user ${ix}`);
    return user;
  }

  fee(price: number): number {
    // The contract's fee: at least 1 coin whenever the platform takes a fee at all.
    if (this.settings.feeBps === 0) return 0;
    return Math.max(1, Math.floor((price * this.settings.feeBps) / 10_000));
  }

  /** The seller's held earnings that are due at `at` and not known released yet. */
  dueFor(seller: number, at: number): number {
    let due = 0;
    for (const p of this.held) {
      if (p.seller === seller && p.holdUntil <= at) due += p.sellerAmount;
    }
    return due;
  }

  /** Completed purchases whose hold the model has not seen released. */
  unreleased(): PurchaseSlot[] {
    return [...this.held];
  }

  hold(purchase: PurchaseSlot): void {
    this.held.add(purchase);
  }

  unhold(purchase: PurchaseSlot): void {
    this.held.delete(purchase);
  }

  /** Posts a ledger transaction the model expects to find, moving the accounts it names. */
  post(kind: EntryKind, entries: ExpectedEntry[], transactionId: string | null): void {
    for (const entry of entries) {
      if (entry.user === null) this.platform[entry.account as PlatformAccount] += entry.amount;
      else this.user(entry.user).accounts[entry.account as UserAccount] += entry.amount;
    }
    this.transactionsByKind[kind] = (this.transactionsByKind[kind] ?? 0) + 1;
    if (transactionId !== null) {
      this.transactions.set(transactionId, { kind, entries });
      this.rows.push({ kind: 'transaction', id: transactionId, at: Date.now() });
    }
  }

  created(kind: RowKind, id: string): void {
    this.rows.push({ kind, id, at: Date.now() });
  }

  /** What a purchase's ledger transaction holds; an entry of 0 is not written. */
  purchaseEntries(p: Pick<PurchaseSlot, 'buyer' | 'seller' | 'price' | 'fee' | 'sellerAmount'>) {
    const entries: ExpectedEntry[] = [
      { account: 'wallet', user: p.buyer, kind: 'purchase', amount: -p.price },
    ];
    if (p.sellerAmount > 0) {
      entries.push({ account: 'creator_pending', user: p.seller, kind: 'sale', amount: p.sellerAmount });
    }
    if (p.fee > 0) entries.push({ account: 'platform_revenue', user: null, kind: 'fee', amount: p.fee });
    return entries;
  }

  /** A hold the service released (seen in the database): legal once, after the hold, unrefunded. */
  release(p: PurchaseSlot, transactionId: string | null, releasedAt: number): string | null {
    if (p.state !== 'completed' || p.released) return `purchase ${p.id} released while ${p.state}`;
    if (releasedAt < p.holdUntil) {
      return `purchase ${p.id} released at ${new Date(releasedAt).toISOString()}, before its hold ended at ${new Date(p.holdUntil).toISOString()}`;
    }
    if ((transactionId === null) !== (p.sellerAmount === 0)) {
      return `purchase ${p.id} (seller amount ${p.sellerAmount}) released with transaction ${transactionId}`;
    }
    p.released = true;
    p.releaseTransactionId = transactionId;
    this.unhold(p);
    if (p.sellerAmount > 0) {
      this.post(
        'release',
        [
          { account: 'creator_pending', user: p.seller, kind: 'release', amount: -p.sellerAmount },
          { account: 'creator_available', user: p.seller, kind: 'release', amount: p.sellerAmount },
        ],
        transactionId,
      );
    }
    return null;
  }

  /** For a concurrent batch: the state to come back to when one order of its answers does not fit. */
  snapshot(): Snapshot {
    const state: MutableState = structuredClone({
      users: this.users,
      items: this.items,
      listings: this.listings,
      purchases: this.purchases,
      payouts: this.payouts,
      platform: this.platform,
      transactionsByKind: this.transactionsByKind,
    });
    return { state, keys: this.keys.size, transactions: this.transactions.size, rows: this.rows.length };
  }

  restore(snapshot: Snapshot): void {
    // A snapshot is restored once and then dropped, so its objects can be taken over as they are.
    Object.assign(this, snapshot.state);
    this.held.clear();
    for (const p of this.purchases)
      if (p.id !== null && p.state === 'completed' && !p.released) this.held.add(p);
    truncate(this.keys, snapshot.keys);
    truncate(this.transactions, snapshot.transactions);
    this.rows.length = snapshot.rows;
  }
}

/** Keeps a map's first `size` insertions (the maps only ever grow by insertion). */
function truncate<K, V>(map: Map<K, V>, size: number): void {
  let at = 0;
  for (const key of [...map.keys()]) if (at++ >= size) map.delete(key);
}
