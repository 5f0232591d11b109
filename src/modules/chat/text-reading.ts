import { LOOK_ALIKES } from './look-alikes.js';

/**
 * How the text filter reads a message: the text its word list is matched against, and where in
 * the message each character of that text came from, so that a match masks the characters the
 * sender wrote. `origins[i]` is the UTF-16 index, in the message, of the character that UTF-16
 * unit `i` of `text` was read from; null when `text` is the message itself.
 */
export interface Reading {
  text: string;
  origins: readonly number[] | null;
}

const ASCII = /^\p{ASCII}*$/u;
/** Characters read as nothing: combining marks (an accent over an f) and invisible ones (joiners, soft hyphens). */
const UNREAD = /^[\p{M}\p{Default_Ignorable_Code_Point}]$/u;
const MARKS = /\p{M}/gu;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const NOT_LETTER_OR_DIGIT = /[^\p{L}\p{N}]/gu;
const LETTER = /\p{L}/u;
/**
 * Letters spelled out one by one ("f u c k", "f.u.c.k"): a letter with no letter, digit or
 * leetspeak symbol beside it, then one or more such letters, each after one to three spaces or
 * punctuation marks. Leetspeak symbols are not gaps, so "sh!t" and "a$$" stay words.
 */
const SPACED_LETTERS_SOURCE =
  '(?<![\\p{L}\\p{N}@$!|(/])\\p{L}(?:(?:(?![@$!|(/])[\\p{White_Space}\\p{P}\\p{S}]){1,3}\\p{L}(?![\\p{L}\\p{N}@$!|(/]))+';
const HAS_SPACED_LETTERS = new RegExp(SPACED_LETTERS_SOURCE, 'u');
const SPACED_LETTERS = new RegExp(SPACED_LETTERS_SOURCE, 'gu');

/**
 * How each character outside ASCII reads, by code point. Bounded so that messages made of ever
 * new characters cannot grow it without end; most chat uses a few hundred characters at most.
 */
const characterReadings = new Map<number, string>();
const MAX_CACHED_CHARACTERS = 20_000;

/**
 * How one character reads: its compatibility decomposition (NFKD: ⓕ, 𝓯 and ｆ read as f) without
 * combining marks, nothing for a mark or an invisible character, and a plain letter for the
 * look-alikes NFKD leaves alone (ꜰ, ƒ). An enclosed form that decomposes to decoration around
 * letters or digits (⒡ is "(f)") reads as those letters or digits alone.
 */
function readCharacter(codePoint: number): string {
  const cached = characterReadings.get(codePoint);
  if (cached !== undefined) return cached;
  const character = String.fromCodePoint(codePoint);
  let read = '';
  if (!UNREAD.test(character)) {
    let decomposed = character.normalize('NFKD').replace(MARKS, '');
    if (decomposed.length > 1 && LETTER_OR_DIGIT.test(decomposed))
      decomposed = decomposed.replace(NOT_LETTER_OR_DIGIT, '');
    for (const part of decomposed) read += LOOK_ALIKES.get(part) ?? part;
  }
  if (characterReadings.size >= MAX_CACHED_CHARACTERS) characterReadings.clear();
  characterReadings.set(codePoint, read);
  return read;
}

/** A text that is not all ASCII, read character by character; runs of ASCII are copied as they are. */
function readCharacters(text: string): Reading {
  let read = '';
  const origins: number[] = [];
  const copy = (start: number, end: number) => {
    read += text.slice(start, end);
    for (let index = start; index < end; index++) origins.push(index);
  };
  let copied = 0;
  for (let index = 0; index < text.length; ) {
    if (text.charCodeAt(index) < 0x80) {
      index++;
      continue;
    }
    copy(copied, index);
    const codePoint = text.codePointAt(index) as number;
    const part = readCharacter(codePoint);
    read += part;
    for (let unit = 0; unit < part.length; unit++) origins.push(index);
    index += codePoint > 0xffff ? 2 : 1;
    copied = index;
  }
  copy(copied, text.length);
  return { text: read, origins };
}

/** The reading with the gaps between letters spelled out one by one taken out. */
function joinSpacedLetters(reading: Reading): Reading {
  if (!HAS_SPACED_LETTERS.test(reading.text)) return reading;
  const { text: from, origins: fromOrigins } = reading;
  let text = '';
  const origins: number[] = [];
  const copy = (start: number, end: number) => {
    text += from.slice(start, end);
    for (let index = start; index < end; index++)
      origins.push(fromOrigins ? (fromOrigins[index] as number) : index);
  };
  let copied = 0;
  for (const run of from.matchAll(SPACED_LETTERS)) {
    copy(copied, run.index);
    let at = run.index;
    for (const character of run[0]) {
      if (LETTER.test(character)) copy(at, at + character.length);
      at += character.length;
    }
    copied = at;
  }
  copy(copied, from.length);
  return { text, origins };
}

/**
 * How the filter reads `message`: each character compatibility-decomposed (NFKD) without
 * combining marks or invisible characters, look-alikes NFKD leaves alone read as their letter,
 * and letters spelled out one by one joined. Case, leetspeak and repeated letters are left to
 * obscenity's transformers. A message of ASCII alone is only looked at for spelled-out letters.
 */
export function readingOf(message: string): Reading {
  return joinSpacedLetters(ASCII.test(message) ? { text: message, origins: null } : readCharacters(message));
}

/**
 * The span `[start, end)` of `message` that the reading's UTF-16 units `first` to `last`
 * (inclusive, as obscenity reports a match) were read from, with the characters right after it
 * that read as nothing (a combining mark on the last letter, a joiner, the gap after a spelled-out
 * letter). Both ends fall between characters of the message, never inside a surrogate pair.
 */
export function spanInMessage(
  reading: Reading,
  message: string,
  first: number,
  last: number,
): [number, number] {
  const origin = (index: number) => (reading.origins ? (reading.origins[index] as number) : index);
  const lastOrigin = origin(last);
  let next = last + 1;
  while (next < reading.text.length && origin(next) === lastOrigin) next++;
  return [origin(first), next < reading.text.length ? origin(next) : message.length];
}
