import { describe, expect, it } from 'vitest';
import { createTextFilter } from '../../src/modules/chat/text-filter.js';

describe('the chat text filter', () => {
  const mask = createTextFilter('mask');

  it.each([
    ['what the fuck', 'what the ****'],
    ['sh1t happens', '**** happens'],
    ['you a55', 'you ***'],
  ])('masks %j, leetspeak included', (body, masked) => {
    expect(mask(body)).toEqual({ body: masked, filtered: true });
  });

  it.each([
    'Scunthorpe United',
    'an assassin in the room',
    'scored 455 points',
    'missed 0.4558688233011814',
    'room 5318008, 3:45 pm, 2026-11-24',
  ])('leaves %j alone: words that only contain a match, and numbers', (body) => {
    expect(mask(body)).toEqual({ body, filtered: false });
  });

  it('refuses instead of masking in reject mode, with MESSAGE_REJECTED naming the body', () => {
    const reject = createTextFilter('reject');
    expect(() => reject('what the fuck')).toThrow(expect.objectContaining({ code: 'MESSAGE_REJECTED' }));
    expect(reject('scored 455 points')).toEqual({ body: 'scored 455 points', filtered: false });
  });
});
