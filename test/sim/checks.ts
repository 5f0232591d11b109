import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { fullChecks } from './checks-full.js';
import { checkInventories, checkListings, checkPayouts, checkPurchases, compareSets } from './compare.js';
import { readTransactions, transactionKey, uuidV7Floor } from './ledger-rows.js';
import type { Model, PlatformAccount, RowKind, UserAccount } from './model.js';

/**
 * The invariants checked in the database after every step, with plain read-only SQL in one
 * snapshot (repeatable read), against the model: holds the service released are learned first
 * (each legal: once, after its hold, unrefunded), then every account's balance (none below zero),
 * the rows made since shortly before the step (each acknowledged write there exactly once, no
 * other), every new transaction's entries (summing to zero, as the model expects them), and the
 * rows the step touched: listings, payouts and their transactions, purchases, inventories, and the
 * idempotency keys it used (an answer stored exactly for the 2xx ones).
 */

export interface Touched {
  users: Set<number>;
  items: Set<number>;
  listings: Set<number>;
  purchases: Set<number>;
  payouts: Set<number>;
  keys: { user: number; key: string }[];
}

export const touchedNothing = (): Touched => ({
  users: new Set(),
  items: new Set(),
  listings: new Set(),
  purchases: new Set(),
  payouts: new Set(),
  keys: [],
});

/** How far before a step the window of new rows reaches: rows committed late (the release job's) still fall in it. */
const WINDOW_MARGIN_MS = 2_000;

const WINDOW_TABLES: Record<Exclude<RowKind, 'transaction'>, string> = {
  item: 'catalog_items',
  listing: 'marketplace_listings',
  purchase: 'purchases',
  payout: 'creator_payouts',
};

export class Checker {
  /** The first of the model's rows learned inside the current window. */
  private windowStart = 0;

  private constructor(
    private readonly client: pg.Client,
    private readonly model: Model,
  ) {}

  static async connect(url: string, model: Model): Promise<Checker> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return new Checker(client, model);
  }

  close(): Promise<void> {
    return this.client.end();
  }

  /** The problems found after a step; `full` adds the whole-database comparisons (checks-full.ts). */
  async check(stepStartedAt: number, touched: Touched, full: boolean): Promise<string[]> {
    const problems: string[] = [];
    await this.client.query('begin isolation level repeatable read read only');
    try {
      await this.learnReleases(problems);
      await this.accounts(problems);
      await this.window(stepStartedAt - WINDOW_MARGIN_MS, problems);
      await this.touchedRows(touched, problems);
      await this.payouts([...touched.payouts], problems);
      await this.keys(touched, problems);
      if (full) await fullChecks(this.client, this.model, problems);
    } finally {
      await this.client.query('rollback');
    }
    return problems;
  }

  private async learnReleases(problems: string[]): Promise<void> {
    const held = this.model.unreleased();
    if (held.length === 0) return;
    const { rows } = await this.client.query<{
      id: string;
      released_at: Date;
      release_transaction_id: string | null;
    }>(
      `select id, released_at, release_transaction_id from purchases
       where id = any($1::uuid[]) and released_at is not null`,
      [held.map((p) => p.id)],
    );
    const byId = new Map(held.map((p) => [p.id, p]));
    for (const row of rows) {
      const p = byId.get(row.id);
      if (!p) continue;
      const problem = this.model.release(p, row.release_transaction_id, row.released_at.getTime());
      if (problem) problems.push(problem);
    }
  }

  private async accounts(problems: string[]): Promise<void> {
    const { rows } = await this.client.query<{ user_id: string | null; kind: string; balance: string }>(
      'select user_id, kind::text as kind, balance::text as balance from economy_accounts',
    );
    const seen = new Set<string>();
    for (const row of rows) {
      const balance = Number(row.balance);
      let expected: number;
      if (row.user_id === null) {
        expected = this.model.platform[row.kind as PlatformAccount];
      } else {
        const ix = this.model.userByUuid.get(row.user_id);
        if (ix === undefined) {
          problems.push(`an account ${row.kind} of a user the simulation does not know: ${row.user_id}`);
          continue;
        }
        expected = this.model.user(ix).accounts[row.kind as UserAccount];
        if (balance < 0)
          problems.push(`${this.model.user(ix).username}'s ${row.kind} is below zero: ${balance}`);
      }
      seen.add(`${row.user_id}|${row.kind}`);
      if (balance !== expected) {
        const whose =
          row.user_id === null
            ? 'the platform'
            : this.model.user(this.model.userByUuid.get(row.user_id) as number).username;
        problems.push(`${whose}'s ${row.kind} holds ${balance}, the acknowledged writes leave ${expected}`);
      }
    }
    for (const user of this.model.users) {
      for (const [kind, value] of Object.entries(user.accounts)) {
        if (value !== 0 && !seen.has(`${user.id}|${kind}`)) {
          problems.push(`${user.username}'s ${kind} should hold ${value} but has no account row`);
        }
      }
    }
  }

  /** Rows minted since `sinceMs`: exactly the model's (an acknowledged write once, nothing unacknowledged). */
  private async window(sinceMs: number, problems: string[]): Promise<void> {
    const floor = uuidV7Floor(sinceMs);
    const rows = this.model.rows;
    this.windowStart = Math.min(this.windowStart, rows.length);
    while (this.windowStart < rows.length && (rows[this.windowStart]?.at ?? 0) < sinceMs) this.windowStart++;
    const expected = new Map<RowKind, Set<string>>();
    for (let i = this.windowStart; i < rows.length; i++) {
      const row = rows[i] as (typeof rows)[number];
      if (row.id < floor) continue;
      if (!expected.has(row.kind)) expected.set(row.kind, new Set());
      expected.get(row.kind)?.add(row.id);
    }
    for (const [kind, table] of Object.entries(WINDOW_TABLES) as [RowKind, string][]) {
      const { rows: found } = await this.client.query<{ id: string }>(
        `select id from ${table} where id >= $1::uuid`,
        [floor],
      );
      compareSets(kind, new Set(found.map((r) => r.id)), expected.get(kind) ?? new Set(), problems);
    }
    const transactions = await readTransactions(this.client, this.model, 't.id >= $1::uuid', floor);
    const known = new Set<string>();
    for (const tx of transactions) {
      if (tx.sum !== 0) problems.push(`transaction ${tx.id} (${tx.kind}) sums to ${tx.sum}, not zero`);
      if (tx.kind === 'payout') {
        if (!this.model.payouts.some((p) => p.id === tx.payoutId)) {
          problems.push(`payout transaction ${tx.id} of a payout no acknowledged write made: ${tx.payoutId}`);
        }
        continue;
      }
      known.add(tx.id);
      const model = this.model.transactions.get(tx.id);
      if (!model) {
        problems.push(
          `transaction ${tx.id} (${tx.kind}) that no acknowledged write made: ${transactionKey(tx.entries)}`,
        );
      } else if (model.kind !== tx.kind || transactionKey(model.entries) !== transactionKey(tx.entries)) {
        problems.push(
          `transaction ${tx.id} is ${tx.kind} [${transactionKey(tx.entries)}], expected ${model.kind} [${transactionKey(model.entries)}]`,
        );
      }
    }
    const missing = [...(expected.get('transaction') ?? [])].filter((id) => !known.has(id));
    if (missing.length)
      problems.push(`acknowledged transactions missing from the ledger: ${missing.join(', ')}`);
  }

  private async touchedRows(touched: Touched, problems: string[]): Promise<void> {
    const m = this.model;
    const ids = <T extends { id: string | null }>(slots: Iterable<number>, all: T[]) =>
      [...slots].map((s) => all[s]?.id).filter((id): id is string => typeof id === 'string');
    const items = await this.client.query<{ id: string; state: string }>(
      'select id, state::text as state from catalog_items where id = any($1::uuid[])',
      [ids(touched.items, m.items)],
    );
    const itemState = new Map(m.items.map((i) => [i.id, i.state]));
    for (const row of items.rows) {
      if (itemState.get(row.id) !== row.state)
        problems.push(`item ${row.id} is ${row.state}, expected ${itemState.get(row.id)}`);
    }
    const listings = await this.client.query<{
      id: string;
      state: string;
      sold_count: number;
      quantity: number | null;
    }>(
      'select id, state::text as state, sold_count, quantity from marketplace_listings where id = any($1::uuid[])',
      [ids(touched.listings, m.listings)],
    );
    checkListings(m, listings.rows, problems);
    const purchases = await this.client.query<{
      id: string;
      state: string;
      refund_transaction_id: string | null;
      released: boolean;
    }>(
      `select id, state::text as state, refund_transaction_id, released_at is not null as released
       from purchases where id = any($1::uuid[])`,
      [ids(touched.purchases, m.purchases)],
    );
    checkPurchases(m, purchases.rows, problems);
    const users = [...touched.users].map((ix) => m.user(ix).id);
    const inventory = await this.client.query<{ user_id: string; item_id: string; quantity: number }>(
      'select user_id, item_id, quantity from inventory_items where user_id = any($1::uuid[])',
      [users],
    );
    checkInventories(m, users, inventory.rows, problems);
  }

  /** A payout's state, and its ledger transactions: exactly the money moves the model made for it. */
  private async payouts(slots: number[], problems: string[]): Promise<void> {
    const payouts = slots.map((s) => this.model.payouts[s]).filter((p) => p?.id);
    if (payouts.length === 0) return;
    const ids = payouts.map((p) => p?.id as string);
    await checkPayouts(this.client, this.model, ids, problems);
  }

  private async keys(touched: Touched, problems: string[]): Promise<void> {
    if (touched.keys.length === 0) return;
    const { rows } = await this.client.query<{ user_id: string; key: string; response: unknown }>(
      `select k.user_id, k.key, k.response from economy_idempotency_keys k
       join unnest($1::uuid[], $2::text[]) as u(user_id, key) on u.user_id = k.user_id and u.key = k.key`,
      [touched.keys.map((k) => this.model.user(k.user).id), touched.keys.map((k) => k.key)],
    );
    const found = new Map(rows.map((r) => [`${this.model.userByUuid.get(r.user_id)}|${r.key}`, r.response]));
    for (const { user, key } of touched.keys) {
      const stored = this.model.keys.get(`${user}|${key}`);
      const row = found.get(`${user}|${key}`);
      if (!stored && row !== undefined) {
        problems.push(
          `key ${key} of ${this.model.user(user).username} stores an answer though no 2xx was acknowledged for it: ${JSON.stringify(row)}`,
        );
      } else if (stored && !isDeepStrictEqual(row, stored.body)) {
        problems.push(
          `key ${key} of ${this.model.user(user).username} stores ${JSON.stringify(row)}, its acknowledged answer was ${JSON.stringify(stored.body)}`,
        );
      }
    }
  }
}
