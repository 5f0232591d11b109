import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readingOf, spanInMessage } from '../../src/modules/chat/text-reading.js';

describe('how the text filter reads a message', () => {
  it.each([
    ['circled letters', 'ⓕⓤⓒⓚ'],
    ['mathematical script letters', '𝓯𝓾𝓬𝓴'],
    ['fullwidth letters', 'ｆｕｃｋ'],
    ['modifier letters', 'ᶠᵘᶜᵏ'],
    ['parenthesised letters', '⒡⒰⒞⒦'],
  ])('reads %s as the plain letters they decompose to (NFKC)', (_case, text) => {
    expect(readingOf(text).text).toBe('fuck');
  });

  it.each([
    ['a combining mark', 'f\u0301uck'],
    ['a precomposed accent', 'fucḱ'],
    ['zero-width joiners', 'f\u200du\u200dck'],
    ['a zero-width space', 'fu\u200bck'],
    ['a soft hyphen', 'fu\u00adck'],
    ['a word joiner', 'f\u2060uck'],
    ['a byte-order mark', 'fuc\ufeffk'],
    ['a variation selector', 'fu\ufe0fck'],
  ])('reads a word with %s inside as the word alone', (_case, text) => {
    expect(readingOf(text).text).toBe('fuck');
  });

  it.each([
    ['small capitals', 'ꜰᴜᴄᴋ', 'fuck'],
    ['letters with a stroke or hook', 'ƒłøɗ', 'flod'],
    ['a small capital Q', 'ꞯ', 'q'],
  ])('reads look-alikes NFKC leaves alone, %s, as their letters', (_case, text, read) => {
    expect(readingOf(text).text).toBe(read);
  });

  it.each([
    ['spaces', 'f u c k you', 'fuck you'],
    ['dots', 'f.u.c.k', 'fuck'],
    ['dashes and spaces', 'F - U - C - K', 'FUCK'],
    ['line breaks', 'f\nu\nc\nk', 'fuck'],
    ['circled letters and spaces', 'ⓕ ⓤ ⓒ ⓚ', 'fuck'],
  ])('joins letters spelled out one by one with %s', (_case, text, read) => {
    expect(readingOf(text).text).toBe(read);
  });

  it.each([
    ['words around single letters', 'I think a cat is here'],
    ['leetspeak symbols, which are letters to the word list', 'sh!t and a$$'],
    ['digits beside letters', 'room a 5 5'],
    ['a letter and a word', 'plan B works'],
  ])('leaves %s as they are', (_case, text) => {
    expect(readingOf(text).text).toBe(text);
  });

  it('reads a message of ASCII with no letters spelled out as the message itself, with no index map', () => {
    const message = 'Are you coming to the plaza tonight? Bring the new hat.';
    expect(readingOf(message)).toEqual({ text: message, origins: null });
  });

  it.each([
    ['letters spelled out', 'oh f u c k you', [3, 10]],
    ['astral letters', 'oh 𝓯𝓾𝓬𝓴!', [3, 11]],
    ['a trailing combining mark', 'fuck\u0301 off', [0, 5]],
    ['a ligature the word starts inside', 'oﬀuck', [1, 5]],
  ])('maps a match in the reading back to the characters the sender wrote: %s', (_case, message, span) => {
    const reading = readingOf(message);
    const first = reading.text.indexOf('fuck');
    const last = reading.text.indexOf('k', first);
    expect(spanInMessage(reading, message, first, last)).toEqual(span);
  });

  it('maps every unit of any reading to the start of a character of the message, in order', () => {
    const pieces = fc.constantFrom(
      'a',
      'b',
      ' ',
      '.',
      '$',
      '5',
      'é',
      'e\u0301',
      '\u200d',
      'ⓕ',
      '𝓯',
      'ﬀ',
      '⒡',
      'ꜰ',
      '😀',
      'の',
    );
    fc.assert(
      fc.property(fc.array(pieces, { maxLength: 30 }), (parts) => {
        const message = parts.join('');
        const { text, origins } = readingOf(message);
        const origin = (index: number) => (origins ? (origins[index] as number) : index);
        const starts = new Set([...message].map((_, index, all) => all.slice(0, index).join('').length));
        for (let index = 0; index < text.length; index++) {
          expect(starts.has(origin(index))).toBe(true);
          if (index > 0) expect(origin(index)).toBeGreaterThanOrEqual(origin(index - 1));
        }
        if (text.length > 0) {
          const [start, end] = spanInMessage({ text, origins }, message, 0, text.length - 1);
          expect(start).toBe(origin(0));
          expect(end === message.length || starts.has(end)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});
