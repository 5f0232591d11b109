import { englishDataset, englishRecommendedTransformers, RegExpMatcher, TextCensor } from 'obscenity';
import { describe, expect, it } from 'vitest';
import { anyTermTest, createTextFilter } from '../../src/modules/chat/text-filter.js';

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

  it('finds a match in every text obscenity alone finds one in: its quick test never turns a match away', () => {
    const matcher = new RegExpMatcher({ ...englishDataset.build(), ...englishRecommendedTransformers });
    const mayMatch = anyTermTest(matcher);
    const pieces = [
      'fuck',
      'sh1t',
      'a$$',
      'b1tch',
      'f u c k',
      'ƒuck',
      'fuuuuck',
      'Dickens',
      'pen is',
      'ＦＵＣＫ',
    ];
    const letters = 'abcdefghiklnorstuw0134578$@!|. ';
    // A fixed sequence (the same cases each run): words and look-alikes glued or spaced, and
    // random runs of the characters leetspeak reads as letters.
    let seed = 7;
    const next = (below: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * below);
    };
    const texts = Array.from({ length: 20_000 }, (_, i) =>
      i % 2 === 0
        ? Array.from({ length: 1 + next(3) }, () => pieces[next(pieces.length)]).join(['', ' ', '.'][next(3)])
        : Array.from({ length: 1 + next(10) }, () => letters[next(letters.length)]).join(''),
    );
    const matched = texts.filter((text) => matcher.getAllMatches(text).length > 0);
    expect(matched.length).toBeGreaterThan(1_000);
    expect(matched.filter((text) => !mayMatch(text))).toEqual([]);
    expect(mayMatch('Are you coming to the plaza tonight? Bring the new hat.')).toBe(false);
  });

  it('refuses to start when the matcher lacks the members its quick test reads', () => {
    expect(() => anyTermTest(new TextCensor() as unknown as RegExpMatcher)).toThrow(
      /no longer has the members/,
    );
  });
});
