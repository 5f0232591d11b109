import { setTimeout as sleep } from 'node:timers/promises';
import type { Actions, Cast } from './actions.js';
import type { Driver } from './driver.js';
import type { Op } from './ops.js';
import type { Draws } from './rng.js';
import type { SimService } from './service.js';

/**
 * Faults at seed-chosen steps, drawn from a stream of their own so that turning them off leaves
 * the actions as they were. Each sends a batch of writes of different users at once and, while
 * they run, either kills the service with SIGKILL (then starts it again) or cuts every database
 * connection through the proxy (refused, or silently held) for a while and restores it. Every
 * request whose answer was lost is sent again with its Idempotency-Key until it is answered.
 */

export const FAULT_DRAWS = 32;

interface Write {
  kind: 'purchase' | 'grant' | 'payout' | 'item' | 'refund';
  x: number;
  y: number;
}

export interface FaultCounts {
  kills: number;
  cuts: number;
}

export class Faults {
  readonly counts: FaultCounts = { kills: 0, cuts: 0 };

  constructor(
    private readonly driver: Driver,
    private readonly actions: Actions,
    private readonly cast: Cast,
    private readonly service: SimService,
    /** The chance that a step ends with a fault. */
    private readonly rate: number,
  ) {}

  /** The fault this step's draws call for, if any, run to its end. */
  async maybe(d: Draws): Promise<string | undefined> {
    const happens = d.unit() < this.rate;
    const kill = d.chance(0.5);
    // Killed after this many of the batch's answers (and a few ms): the rest are in flight, some
    // of them committing.
    const killAfterAnswers = d.int(0, 2);
    const killAfterMs = d.int(0, 10);
    const mode = d.chance(0.5) ? 'refuse' : 'blackhole';
    const cutMs = d.int(300, 2500);
    const count = d.int(3, 6);
    const people = this.actions.distinctPeople(d, count);
    const writes = Array.from({ length: 6 }, () => ({
      kind: d.weighted({ purchase: 45, grant: 20, payout: 15, item: 10, refund: 10 }),
      x: d.unit(),
      y: d.unit(),
    }));
    if (!happens) return undefined;
    // Slots are made only for a fault that happens, after every draw of the step was taken.
    const batch = people.map((person, i) => this.driver.prepare(this.write(writes[i] as Write, person)));
    const client = this.driver.client;
    if (kill) {
      this.driver.action = `kill -9 ${killAfterMs} ms after ${killAfterAnswers} answers of a batch of ${batch.length}`;
      this.counts.kills++;
      const answered = client.answersFromNow(Math.min(killAfterAnswers, batch.length - 1));
      await this.driver.runBatch(batch, async () => {
        await answered;
        await sleep(killAfterMs);
        client.faultUnderWay = true;
        await this.service.kill();
        await this.service.start();
      });
    } else {
      this.driver.action = `database cut (${mode}) for ${cutMs} ms under a batch of ${batch.length}`;
      this.counts.cuts++;
      client.faultUnderWay = true;
      await this.service.proxy.setMode(mode);
      await this.driver.runBatch(batch, async () => {
        await sleep(cutMs);
        await this.service.proxy.setMode('forward');
      });
    }
    client.faultUnderWay = false;
    client.faultEndedAt = Date.now();
    client.lastFault = this.driver.action;
    return this.driver.action;
  }

  /** One write of `person`'s (or about them), from its drawn kind and numbers. */
  private write({ kind, x, y }: Write, person: number): Op {
    const model = this.driver.model;
    const admin = this.cast.admins[Math.floor(y * this.cast.admins.length)] as number;
    switch (kind) {
      case 'purchase': {
        const listing = model.listings.length - 1 - Math.floor(x * Math.min(model.listings.length, 60));
        if (listing >= 0) return this.actions.newPurchase(person, listing);
        return { t: 'grant', actor: admin, user: person, amount: 1 + Math.floor(y * 3000) };
      }
      case 'grant':
        return { t: 'grant', actor: admin, user: person, amount: 1 + Math.floor(x * 3000) };
      case 'payout':
        return this.actions.newPayout(person, 50 + Math.floor(x * 800));
      case 'item':
        return this.actions.newItem(person, x < 0.5);
      case 'refund': {
        const purchase = model.purchases.length - 1 - Math.floor(x * Math.min(model.purchases.length, 150));
        if (purchase >= 0) return { t: 'refund', actor: admin, purchase };
        return { t: 'grant', actor: admin, user: person, amount: 1 + Math.floor(y * 3000) };
      }
    }
  }
}
