import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/platform/fifo.js';

describe('Fifo', () => {
  it('hands items back in the order they were pushed, across the compactions of a long queue', () => {
    const queue = new Fifo<number>();
    const reference: number[] = [];
    const taken: number[] = [];
    let next = 0;
    // Pushes outpace takes, then takes drain it: the taken part is dropped several times over.
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 300; i++) {
        queue.push(next);
        reference.push(next++);
      }
      for (let i = 0; i < 200; i++) taken.push(queue.shift() as number);
      expect(queue.length).toBe(reference.length - taken.length);
    }
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) taken.push(item);
    expect(taken).toEqual(reference);
    expect(queue.length).toBe(0);
  });

  it('answers undefined when empty, and takes again after being emptied', () => {
    const queue = new Fifo<string>();
    expect(queue.shift()).toBeUndefined();
    queue.push('a');
    expect(queue.shift()).toBe('a');
    expect(queue.shift()).toBeUndefined();
    queue.push('b');
    expect(queue.shift()).toBe('b');
  });

  it('takeAll answers what is left in order and empties the queue', () => {
    const queue = new Fifo<number>();
    for (let i = 0; i < 2_000; i++) queue.push(i);
    for (let i = 0; i < 1_500; i++) queue.shift();
    expect(queue.takeAll()).toEqual(Array.from({ length: 500 }, (_, i) => 1_500 + i));
    expect(queue.length).toBe(0);
    expect(queue.shift()).toBeUndefined();
  });
});
