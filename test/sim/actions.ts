import { setTimeout as sleep } from 'node:timers/promises';
import type { Driver } from './driver.js';
import type { ItemSlot, Model, PayoutState } from './model.js';
import type { Decision, Op } from './ops.js';
import type { Draws } from './rng.js';

/**
 * The driver's actions, each chosen and parameterised from a step's block of draws. What a draw
 * picks among is the seed's alone wherever it can be: slots (made when first asked for, so their
 * numbering never depends on answers), users, amounts, prices. Only what the service decided
 * flows into a request: the ids it minted, and the state an admin decides a payout from.
 */

export const ACTION_DRAWS = 24;

const WEIGHTS = {
  grant: 10,
  list: 7,
  purchase: 25,
  cancel: 2,
  itemState: 2,
  refund: 8,
  payoutRequest: 7,
  decide: 8,
  decideRace: 3,
  buyRace: 3,
  refundPayoutRace: 2,
  refundAtHoldEnd: 1.5,
  payoutAtHoldEnd: 1,
  replay: 6,
  reuse: 2,
  read: 5,
};

export type ActionName = keyof typeof WEIGHTS;

export interface Cast {
  /** Users who buy, sell and request payouts. */
  people: number[];
  admins: number[];
}

export class Actions {
  constructor(
    private readonly driver: Driver,
    private readonly cast: Cast,
  ) {}

  private get model(): Model {
    return this.driver.model;
  }

  async act(d: Draws): Promise<ActionName> {
    const name = d.weighted(WEIGHTS);
    this.driver.action = name;
    await this[name](d);
    return name;
  }

  private person(d: Draws): number {
    return d.pick(this.cast.people);
  }

  private admin(d: Draws): number {
    return d.pick(this.cast.admins);
  }

  /** Mostly small amounts, now and then a few thousand. */
  private amount(d: Draws, lo: number, span: number): number {
    return lo + Math.floor(d.unit() ** 2 * span);
  }

  /** Prices from 1 (a fee of at least one coin takes it all) to a few thousand. */
  private price(d: Draws): number {
    const tier = d.unit();
    const x = d.unit();
    if (tier < 0.15) return 1 + Math.floor(x * 3);
    if (tier < 0.75) return 4 + Math.floor(x * 497);
    return 500 + Math.floor(x * 2500);
  }

  private async grant(d: Draws): Promise<void> {
    const actor = this.admin(d);
    const user = d.chance(0.03) ? null : this.person(d);
    await this.driver.run(this.driver.prepare({ t: 'grant', actor, user, amount: this.amount(d, 1, 5000) }));
  }

  newItem(actor: number, consumable: boolean): Op {
    const slot = this.model.items.length;
    this.model.items.push({ slot, creator: actor, consumable, id: null, state: 'draft' });
    return { t: 'item.create', actor, slot, consumable };
  }

  newListing(actor: number, item: number, price: number, quantity: number | null): Op {
    const slot = this.model.listings.length;
    this.model.listings.push({
      slot,
      seller: actor,
      item,
      price,
      quantity,
      id: null,
      state: 'active',
      soldCount: 0,
    });
    return { t: 'listing.create', actor, slot, item, price, quantity };
  }

  newPurchase(actor: number, listing: number): Op {
    const slot = this.model.purchases.length;
    this.model.purchases.push({
      slot,
      buyer: actor,
      listing,
      id: null,
      seller: this.model.listings[listing]?.seller ?? actor,
      itemId: '',
      price: 0,
      fee: 0,
      sellerAmount: 0,
      holdUntil: 0,
      state: 'completed',
      released: false,
      answer: null,
      transactionId: null,
      refundTransactionId: null,
      releaseTransactionId: null,
    });
    return { t: 'purchase', actor, slot, listing };
  }

  newPayout(actor: number, amount: number): Op {
    const slot = this.model.payouts.length;
    this.model.payouts.push({
      slot,
      user: actor,
      amount,
      id: null,
      state: 'requested',
      note: null,
      moves: [],
    });
    return { t: 'payout.request', actor, slot, amount };
  }

  /** A listing of a published item of the seller's: an existing one, or a new item made and published first. */
  private async list(d: Draws): Promise<void> {
    const actor = this.person(d);
    const price = this.price(d);
    const quantity = d.chance(0.65) ? null : d.int(1, 8);
    const reuse = d.chance(0.5);
    const pickFrom = d.unit();
    const consumable = d.chance(0.5);
    const someoneElses = d.chance(0.03);
    const items = this.model.items;
    if (someoneElses && items.length > 0) {
      const item = Math.floor(pickFrom * items.length);
      await this.driver.run(this.driver.prepare(this.newListing(actor, item, price, quantity)));
      return;
    }
    const published = items.filter((i) => i.creator === actor && i.state === 'published');
    let item: ItemSlot | undefined = reuse ? published[Math.floor(pickFrom * published.length)] : undefined;
    if (!item) {
      const create = this.newItem(actor, consumable) as Extract<Op, { t: 'item.create' }>;
      await this.driver.run(this.driver.prepare(create));
      await this.driver.run(
        this.driver.prepare({ t: 'item.state', actor, item: create.slot, state: 'published' }),
      );
      item = items[create.slot];
    }
    await this.driver.run(this.driver.prepare(this.newListing(actor, item?.slot ?? 0, price, quantity)));
  }

  private async purchase(d: Draws): Promise<void> {
    const listing = d.recent(this.model.listings.length, 40);
    const own = d.chance(0.05);
    const pick = d.int(0, this.cast.people.length - 2);
    const seller = this.model.listings[listing]?.seller;
    if (seller === undefined) return this.read(d);
    // Another person than the seller, but now and then the seller, buying from their own listing (422).
    const others = this.cast.people.filter((p) => p !== seller);
    const actor = own ? seller : (others[pick % others.length] as number);
    await this.driver.run(this.driver.prepare(this.newPurchase(actor, listing)));
  }

  private async cancel(d: Draws): Promise<void> {
    const slot = d.recent(this.model.listings.length, 80);
    const who = d.unit();
    const other = this.person(d);
    const admin = this.admin(d);
    const listing = this.model.listings[slot];
    if (!listing) return this.read(d);
    const actor = who < 0.8 ? listing.seller : who < 0.95 ? admin : other;
    await this.driver.run(this.driver.prepare({ t: 'listing.cancel', actor, listing: slot }));
  }

  private async itemState(d: Draws): Promise<void> {
    const slot = d.recent(this.model.items.length, 50);
    const state = d.chance(0.6) ? 'published' : 'retired';
    const stranger = d.chance(0.1);
    const other = this.person(d);
    const item = this.model.items[slot];
    if (!item) return this.read(d);
    await this.driver.run(
      this.driver.prepare({ t: 'item.state', actor: stranger ? other : item.creator, item: slot, state }),
    );
  }

  private async refund(d: Draws): Promise<void> {
    const actor = this.admin(d);
    const purchase = d.recent(this.model.purchases.length, 150);
    if (purchase < 0) return this.read(d);
    await this.driver.run(this.driver.prepare({ t: 'refund', actor, purchase }));
  }

  private payoutAmount(d: Draws): number {
    return d.chance(0.08) ? d.int(1, 49) : 50 + Math.floor(d.unit() ** 4 * 600);
  }

  private async payoutRequest(d: Draws): Promise<void> {
    const actor = this.person(d);
    await this.driver.run(this.driver.prepare(this.newPayout(actor, this.payoutAmount(d))));
  }

  private decision(d: Draws, actor: number, payout: number): Op {
    const state = d.weighted<Decision>({ approved: 40, paid: 35, rejected: 25 });
    const note = d.chance(0.3) ? `decided at step by admin ${actor}` : null;
    const expected: PayoutState = this.model.payouts[payout]?.state ?? 'requested';
    return { t: 'payout.decide', actor, payout, state, expected, note };
  }

  private async decide(d: Draws): Promise<void> {
    const actor = this.admin(d);
    const payout = d.recent(this.model.payouts.length, 25);
    if (payout < 0) return this.read(d);
    await this.driver.run(this.driver.prepare(this.decision(d, actor, payout)));
  }

  /** Both admins decide one payout at once, from the same state: one of them wins. */
  private async decideRace(d: Draws): Promise<void> {
    const payout = d.recent(this.model.payouts.length, 25);
    if (payout < 0) return this.read(d);
    const ops = this.cast.admins.map((admin) => this.decision(d, admin, payout));
    await this.driver.runBatch(ops.map((op) => this.driver.prepare(op)));
  }

  /** Several buyers at once on one listing, often a limited one near its last unit, now and then withdrawn meanwhile. */
  private async buyRace(d: Draws): Promise<void> {
    const listing = d.recent(this.model.listings.length, 30);
    const count = d.int(3, 5);
    const buyers = this.distinctPeople(d, count);
    const withdrawal = d.weighted({ none: 60, cancel: 25, retire: 15 });
    const l = this.model.listings[listing];
    if (!l) return this.read(d);
    // Now and then the seller withdraws meanwhile: cancels the listing, or retires its item.
    const seller = l.seller;
    const ops: Op[] = buyers.filter((b) => b !== seller).map((b) => this.newPurchase(b, listing));
    if (withdrawal === 'cancel') ops.push({ t: 'listing.cancel', actor: seller, listing });
    if (withdrawal === 'retire') ops.push({ t: 'item.state', actor: seller, item: l.item, state: 'retired' });
    await this.driver.runBatch(ops.map((op) => this.driver.prepare(op)));
  }

  /** An admin refunds a sale while its seller requests a payout (which releases their due holds). */
  private async refundPayoutRace(d: Draws): Promise<void> {
    const actor = this.admin(d);
    const purchase = d.recent(this.model.purchases.length, 150);
    const amount = this.payoutAmount(d);
    const p = this.model.purchases[purchase];
    if (!p) return this.read(d);
    const seller = this.model.listings[p.listing]?.seller ?? p.seller;
    await this.driver.runBatch([
      this.driver.prepare({ t: 'refund', actor, purchase }),
      this.driver.prepare(this.newPayout(seller, amount)),
    ]);
  }

  /** A refund sent as its purchase's hold ends (at a drawn offset from it): which comes first is timing's. */
  private async refundAtHoldEnd(d: Draws): Promise<void> {
    const actor = this.admin(d);
    const purchase = this.model.purchases.length - 1 - d.int(10, 30);
    const offset = d.int(-20, 10);
    if (purchase < 0) return this.read(d);
    await this.untilHoldEnds(purchase, offset);
    await this.driver.run(this.driver.prepare({ t: 'refund', actor, purchase }));
  }

  /**
   * The seller asks, as a sale's hold ends, for exactly what they hold once it is released: the
   * request releases due holds first, so whether it is covered is timing's. (The amount follows
   * the model's balances, so a replay of the seed asks the same only while they are the same.)
   */
  private async payoutAtHoldEnd(d: Draws): Promise<void> {
    const purchase = this.model.purchases.length - 1 - d.int(10, 30);
    const offset = d.int(-20, 10);
    const p = this.model.purchases[purchase];
    if (!p) return this.read(d);
    const seller = this.model.listings[p.listing]?.seller ?? p.seller;
    await this.untilHoldEnds(purchase, offset);
    const held = this.model.user(seller).accounts.creator_available + this.model.dueFor(seller, p.holdUntil);
    const amount = Math.max(this.model.settings.payoutMinimum, held);
    await this.driver.run(this.driver.prepare(this.newPayout(seller, amount)));
  }

  /** Waits until `offset` ms from the end of a held purchase's hold, if that is at most 1.5 s away. */
  private async untilHoldEnds(slot: number, offset: number): Promise<void> {
    const p = this.model.purchases[slot];
    if (!p?.id || p.state !== 'completed' || p.released) return;
    const wait = p.holdUntil + offset - Date.now();
    if (wait > 0 && wait <= 1500) await sleep(wait);
  }

  /** The same request again, same key and body: a replay of its stored answer, or a fresh run if none was stored. */
  private async replay(d: Draws): Promise<void> {
    const user = d.pick([...this.cast.people, ...this.cast.admins]);
    const sent = this.driver.sentBy(user);
    const index = d.recent(sent.length, 300);
    const original = sent[index];
    if (!original) return this.read(d);
    await this.driver.run(original);
  }

  /** An earlier key of the buyer's on a new purchase: 422 IDEMPOTENCY_KEY_REUSED when the key stored an answer. */
  private async reuse(d: Draws): Promise<void> {
    const actor = this.person(d);
    const sent = this.driver.sentBy(actor);
    const index = d.recent(sent.length, 300);
    const listing = d.recent(this.model.listings.length, 60);
    const key = sent[index]?.request.key;
    if (key === undefined || listing < 0) return this.read(d);
    await this.driver.run(this.driver.prepare(this.newPurchase(actor, listing), key));
  }

  private async read(d: Draws): Promise<void> {
    const actor = this.person(d);
    const which = d.int(0, 2);
    const item = d.recent(this.model.items.length, 100);
    const op: Op =
      which === 0 || item < 0
        ? { t: 'read.wallet', actor }
        : which === 1
          ? { t: 'read.creator', actor }
          : { t: 'read.inventory', actor, item };
    await this.driver.run(this.driver.prepare(op));
  }

  /** `count` different people, starting at a drawn one and stepping by a drawn stride. */
  distinctPeople(d: Draws, count: number): number[] {
    const people = this.cast.people;
    const start = d.int(0, people.length - 1);
    const picked: number[] = [];
    for (let i = 0; picked.length < Math.min(count, people.length); i++) {
      const candidate = people[(start + i) % people.length] as number;
      picked.push(candidate);
    }
    return picked;
  }
}
