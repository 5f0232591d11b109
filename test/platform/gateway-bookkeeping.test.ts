import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Expiring, ExpiryQueue } from '../../src/platform/gateway/expiry-queue.js';
import { UserIndex } from '../../src/platform/gateway/user-index.js';

/** The gateway's per-node bookkeeping structures, on their own. */
describe('ExpiryQueue', () => {
  const start = Date.parse('2026-11-21T12:00:00.000Z');
  let expired: string[];
  let queue: ExpiryQueue<Expiring & { name: string }>;
  const entry = (name: string) => ({ name, expirySecond: undefined as number | undefined });

  beforeEach(() => {
    vi.useFakeTimers({ now: start });
    expired = [];
    queue = new ExpiryQueue((e) => expired.push(e.name));
  });

  afterEach(() => {
    queue.stop();
    vi.useRealTimers();
  });

  it('expires each entry once its second has come, and not before', () => {
    queue.schedule(entry('a'), start + 2_000);
    queue.schedule(entry('b'), start + 1_000);
    vi.advanceTimersByTime(999);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['b']);
    vi.advanceTimersByTime(999);
    expect(expired).toEqual(['b']);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['b', 'a']);
    vi.advanceTimersByTime(10_000);
    expect(expired).toEqual(['b', 'a']);
  });

  it('waits for a time further away than a timer can wait in steps, firing once it has come', () => {
    const day = 86_400_000;
    queue.schedule(entry('far'), start + 400 * day);
    vi.advanceTimersByTime(399 * day);
    expect(expired).toEqual([]);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(day);
    expect(expired).toEqual(['far']);
  });

  it('rounds a time within a second up to the end of that second', () => {
    queue.schedule(entry('a'), start + 1_200);
    vi.advanceTimersByTime(1_999);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a']);
  });

  it('a new time replaces the earlier one, and a cancelled entry never expires', () => {
    const moved = entry('moved');
    const cancelled = entry('cancelled');
    queue.schedule(moved, start + 1_000);
    queue.schedule(cancelled, start + 1_000);
    queue.schedule(moved, start + 3_000);
    queue.cancel(cancelled);
    expect(cancelled.expirySecond).toBeUndefined();
    vi.advanceTimersByTime(2_000);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1_000);
    expect(expired).toEqual(['moved']);
    expect(moved.expirySecond).toBeUndefined();
  });

  it('an entry due earlier than the armed timer still expires on time', () => {
    queue.schedule(entry('late'), start + 5_000);
    queue.schedule(entry('early'), start + 1_000);
    vi.advanceTimersByTime(1_000);
    expect(expired).toEqual(['early']);
  });

  it('expires nothing after stop', () => {
    queue.schedule(entry('a'), start + 1_000);
    queue.stop();
    vi.advanceTimersByTime(5_000);
    expect(expired).toEqual([]);
  });
});

describe('UserIndex', () => {
  it("reports a user's first connection, later ones and repeats", () => {
    const index = new UserIndex<string>();
    expect(index.add('u1', 'c1')).toBe(true);
    expect(index.add('u1', 'c1')).toBeUndefined();
    expect(index.add('u1', 'c2')).toBe(false);
    expect(index.add('u1', 'c2')).toBeUndefined();
    expect(index.add('u2', 'c3')).toBe(true);
    expect(index.userIds().sort()).toEqual(['u1', 'u2']);
  });

  it("reports the user's last connection leaving, and ignores one it never held", () => {
    const index = new UserIndex<string>();
    index.add('u1', 'c1');
    index.add('u1', 'c2');
    index.add('u1', 'c3');
    expect(index.delete('u1', 'nope')).toBeUndefined();
    expect(index.delete('u2', 'c1')).toBeUndefined();
    expect(index.delete('u1', 'c2')).toBe(false);
    expect(index.delete('u1', 'c1')).toBe(false);
    expect(index.add('u1', 'c1')).toBe(false);
    expect(index.delete('u1', 'c3')).toBe(false);
    expect(index.delete('u1', 'c1')).toBe(true);
    expect(index.delete('u1', 'c1')).toBeUndefined();
    expect(index.userIds()).toEqual([]);
  });
});
