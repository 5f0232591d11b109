import { describe, expect, it } from 'vitest';
import { OrderedSet } from '../../src/platform/kv/ordered-set.js';
import { Rng } from '../sim/rng.js';

/** The tree behind the set, read only to check its shape. */
interface Node {
  member: string;
  left: Node | null;
  right: Node | null;
  size: number;
}
const rootOf = (set: OrderedSet) => (set as unknown as { root: Node | null }).root;
const sizeOf = (node: Node | null) => node?.size ?? 0;

/**
 * The height of the tree under `node`, after checking every node's size, order and weight balance
 * (no side more than 3 times the other); a plain check per node, as expect() on 65,536 nodes is slow.
 */
function checkShape(node: Node | null, low?: string, high?: string): number {
  if (!node) return 0;
  const left = sizeOf(node.left);
  const right = sizeOf(node.right);
  const ordered = (low === undefined || node.member > low) && (high === undefined || node.member < high);
  const balanced = left + right <= 1 || (left <= 3 * right && right <= 3 * left);
  if (!ordered || !balanced || node.size !== left + right + 1)
    throw new Error(
      `bad node ${node.member}: sizes ${left} ${right} ${node.size}, between ${low} and ${high}`,
    );
  return 1 + Math.max(checkShape(node.left, low, node.member), checkShape(node.right, node.member, high));
}

/** ASCII strings of 0-4 characters from a small alphabet: many shared prefixes, repeats and misses. */
function randomString(rng: Rng): string {
  const length = rng.next() % 5;
  let text = '';
  for (let i = 0; i < length; i++) text += ' !09AZaz~'[rng.next() % 9];
  return text;
}

/** How many of the sorted `members` are below `bound` (or also equal, `inclusive`). */
function countBelow(members: readonly string[], bound: string, inclusive = false): number {
  return members.filter((member) => member < bound || (inclusive && member === bound)).length;
}

describe('OrderedSet', () => {
  it('an empty set has no members, positions or pages', () => {
    const set = new OrderedSet();
    expect(set.size).toBe(0);
    expect(set.rank('a')).toBeNull();
    expect(set.countBelow('a')).toBe(0);
    expect(set.countBelow('a', true)).toBe(0);
    expect(set.slice(0, 10)).toEqual([]);
    expect(set.delete('a')).toBe(false);
  });

  it('answers like a sorted array through thousands of random adds and deletes', () => {
    const rng = new Rng(20_240_601, 1);
    const set = new OrderedSet();
    const reference = new Set<string>();
    for (let step = 0; step < 6000; step++) {
      const member = randomString(rng);
      if (rng.next() % 3 === 0) expect(set.delete(member)).toBe(reference.delete(member));
      else {
        expect(set.add(member)).toBe(!reference.has(member));
        reference.add(member);
      }
      if (step % 500 !== 499) continue;
      const sorted = [...reference].sort();
      expect(set.size).toBe(sorted.length);
      expect(set.slice(0, sorted.length)).toEqual(sorted);
      checkShape(rootOf(set));
      sorted.forEach((present, index) => {
        expect(set.rank(present)).toBe(index);
      });
      for (let probe = 0; probe < 200; probe++) {
        const bound = randomString(rng);
        expect(set.rank(bound)).toBe(reference.has(bound) ? sorted.indexOf(bound) : null);
        expect(set.countBelow(bound)).toBe(countBelow(sorted, bound));
        expect(set.countBelow(bound, true)).toBe(countBelow(sorted, bound, true));
        const start = (rng.next() % (sorted.length + 4)) - 2;
        const end = start + (rng.next() % 12);
        expect(set.slice(start, end)).toEqual(sorted.slice(Math.max(0, start), Math.max(0, end)));
      }
    }
  });

  it('stays balanced when members arrive in order, the worst case of an unbalanced tree', () => {
    const set = new OrderedSet();
    const count = 1 << 16;
    for (let i = 0; i < count; i++) set.add(String(i).padStart(6, '0'));
    // A weight-balanced tree of n nodes is at most log_{4/3} n deep; a plain one would be n deep.
    expect(checkShape(rootOf(set))).toBeLessThanOrEqual(Math.ceil(Math.log(count) / Math.log(4 / 3)));
    for (let i = 0; i < count; i += 2) set.delete(String(i).padStart(6, '0'));
    checkShape(rootOf(set));
    expect(set.size).toBe(count / 2);
    expect(set.slice(0, 3)).toEqual(['000001', '000003', '000005']);
    expect(set.rank('065535')).toBe(count / 2 - 1);
  });

  it('deleting every member leaves an empty set that takes members again', () => {
    const set = new OrderedSet();
    for (const member of ['b', 'a', 'c']) set.add(member);
    for (const member of ['a', 'b', 'c']) expect(set.delete(member)).toBe(true);
    expect(set.size).toBe(0);
    expect(rootOf(set)).toBeNull();
    expect(set.add('d')).toBe(true);
    expect(set.slice(0, 5)).toEqual(['d']);
  });
});
