/**
 * The simulation's randomness: sfc32 (Chris Doty-Humphrey's small fast counting generator) seeded
 * through splitmix32, one independent stream per purpose. Nothing in the driver reads
 * Math.random or the clock to choose: a seed decides every choice.
 */

function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** One stream of `seed`; another `stream` number gives an unrelated sequence. */
  constructor(seed: number, stream: number) {
    const mix = splitmix32((seed ^ Math.imul(stream + 1, 0x27d4eb2f)) >>> 0);
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = mix();
    for (let i = 0; i < 12; i++) this.next();
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /**
   * The draws of one step: always `count` values, whatever the step then uses, so that what the
   * service decides (which answers came back) never shifts the stream of later steps.
   */
  block(count: number): Draws {
    return new Draws(Array.from({ length: count }, () => this.next()));
  }
}

/** A fixed block of draws, read in order; reading past its end is a mistake of the driver. */
export class Draws {
  private at = 0;

  constructor(private readonly values: readonly number[]) {}

  private take(): number {
    const value = this.values[this.at++];
    if (value === undefined) throw new Error(`a step used more than its ${this.values.length} draws`);
    return value;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + (this.take() % (hi - lo + 1));
  }

  /** A number in [0, 1). */
  unit(): number {
    return this.take() / 2 ** 32;
  }

  chance(p: number): boolean {
    return this.unit() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** One key of `weights`, with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    let x = this.unit() * total;
    for (const [key, w] of entries) {
      x -= w;
      if (x < 0) return key;
    }
    return (entries[entries.length - 1] as [K, number])[0];
  }

  /** An index into the last `window` of `length` slots, the recent ones likelier; -1 when empty. */
  recent(length: number, window: number): number {
    if (length === 0) {
      this.take();
      return -1;
    }
    const span = Math.min(length, window);
    // The square skews towards the newest slots: most targets are recent, some are old.
    const back = Math.floor(this.unit() ** 2 * span);
    return length - 1 - back;
  }
}
