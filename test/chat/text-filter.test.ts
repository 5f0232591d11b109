import { englishDataset, englishRecommendedTransformers, RegExpMatcher, TextCensor } from 'obscenity';
import { describe, expect, it } from 'vitest';
import { anyTermTest, createTextFilter } from '../../src/modules/chat/text-filter.js';
import { readingOf } from '../../src/modules/chat/text-reading.js';

/** Words and look-alikes, glued or spaced, and runs of the characters leetspeak reads as letters. */
function generatedTexts(count: number, pieces: string[]): string[] {
  const letters = 'abcdefghiklnorstuw0134578$@!|. ';
  // A fixed sequence: the same cases each run.
  let seed = 7;
  const next = (below: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * below);
  };
  return Array.from({ length: count }, (_, i) =>
    i % 2 === 0
      ? Array.from({ length: 1 + next(3) }, () => pieces[next(pieces.length)]).join(['', ' ', '.'][next(3)])
      : Array.from({ length: 1 + next(10) }, () => letters[next(letters.length)]).join(''),
  );
}

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
    ['circled letters', 'what the ⓕⓤⓒⓚ', 'what the ****'],
    ['mathematical script letters', '𝓯𝓾𝓬𝓴 that', '**** that'],
    ['small capitals', 'ꜰᴜᴄᴋ', '****'],
    ['letters spelled out with spaces', 'f u c k you', '******* you'],
    ['letters spelled out with dots', 'S.H.I.T.', '*******.'],
    ['a combining mark', 'f\u0301uck', '*****'],
    ['zero-width joiners', 'f\u200du\u200dck', '******'],
    ['a soft hyphen', 'bit\u00adch', '******'],
  ])('masks a word disguised with %s, character for character of what was sent', (_case, body, masked) => {
    expect(mask(body)).toEqual({ body: masked, filtered: true });
  });

  it.each([
    'Scunthorpe United',
    'an assassin in the room',
    'scored 455 points',
    'missed 0.4558688233011814',
    'room 5318008, 3:45 pm, 2026-11-24',
    'scored ４５５ points, then 4 5 5',
  ])('leaves %j alone: words that only contain a match, and numbers', (body) => {
    expect(mask(body)).toEqual({ body, filtered: false });
  });

  it.each([
    'I think I am late, and I a m sure of it',
    'Is it a, b or c?',
    'Plan A or plan B: a plan is a plan',
    'Vitamins A, C and E',
    'I, a student, am here',
    'U S A, U.K. and e.g. p.s. notes',
    'J. K. Rowling and T. S. Eliot',
    'Q & A session at 5',
    'a b c d e f g',
    'A B C D E F G H I J K L M N O P Q R S T U V W X Y Z',
    'Press F to pay respects',
    'is it f or u?',
    'the f-word',
    'café, naïve résumé, mañana, Straße',
    'ﬁne ﬂowers and ½ a cake',
    '日本語 の テ キ ス ト',
    'family 👨\u200d👩\u200d👧 and a 😀',
  ])('lets the ordinary text %j through unmasked', (body) => {
    expect(mask(body)).toEqual({ body, filtered: false });
  });

  it('keeps every masked body at the length in characters it was sent with', () => {
    const texts = generatedTexts(5_000, [
      'ⓕⓤⓒⓚ',
      '𝓯𝓾𝓬𝓴',
      'f u c k',
      'f\u0301uck',
      'a s s',
      'sh1t',
      'é',
      '😀',
    ]);
    const masked = texts.map((text) => [text, mask(text)] as const).filter(([, result]) => result.filtered);
    expect(masked.length).toBeGreaterThan(500);
    for (const [text, { body }] of masked) {
      expect([...body].length).toBe([...text].length);
      expect(body.length).toBeLessThanOrEqual(text.length);
    }
  });

  it('refuses instead of masking in reject mode, with MESSAGE_REJECTED naming the body', () => {
    const reject = createTextFilter('reject');
    expect(() => reject('what the fuck')).toThrow(expect.objectContaining({ code: 'MESSAGE_REJECTED' }));
    expect(() => reject('what the ⓕⓤⓒⓚ')).toThrow(expect.objectContaining({ code: 'MESSAGE_REJECTED' }));
    expect(reject('scored 455 points')).toEqual({ body: 'scored 455 points', filtered: false });
  });

  it('finds a match in every text whose reading obscenity finds one in: its quick test, given the same reading, never turns a match away', () => {
    const matcher = new RegExpMatcher({ ...englishDataset.build(), ...englishRecommendedTransformers });
    const mayMatch = anyTermTest(matcher);
    const texts = generatedTexts(20_000, [
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
      'ⓕⓤⓒⓚ',
      'ꜰᴜᴄᴋ',
      'f\u200du\u200dck',
      'a s s',
      'I',
    ]);
    const readings = texts.map((text) => readingOf(text).text);
    const matched = readings.filter((reading) => matcher.getAllMatches(reading).length > 0);
    expect(matched.length).toBeGreaterThan(1_000);
    expect(matched.filter((reading) => !mayMatch(reading))).toEqual([]);
    // Reading a text never loses a match obscenity finds in the text as sent.
    expect(
      texts.filter((text, index) => matcher.hasMatch(text) && !matcher.hasMatch(readings[index] as string)),
    ).toEqual([]);
    expect(mayMatch('Are you coming to the plaza tonight? Bring the new hat.')).toBe(false);
  });

  it('refuses to start when the matcher lacks the members its quick test reads', () => {
    expect(() => anyTermTest(new TextCensor() as unknown as RegExpMatcher)).toThrow(
      /no longer has the members/,
    );
  });
});
