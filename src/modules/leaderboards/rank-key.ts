/**
 * A record's place in its standings as one key: (rank_score, rank_subscore, updated_at, user_id),
 * ascending, where rank_score and rank_subscore are the score and subscore turned so that
 * ascending is the board's order (negated for `desc`). SQL compares the tuple with the records'
 * rank index; the rank index of the KV compares the key encoded as a fixed-width ASCII string,
 * whose byte order is the tuple's order. Both therefore break ties identically.
 */
export interface RankKey {
  rankScore: number;
  rankSubscore: number;
  /** Milliseconds since the epoch: the service writes `updated_at` at millisecond precision. */
  updatedAt: number;
  userId: string;
}

/**
 * A value is shifted by 2^53-1, from ±(2^53-1) to 0..2^54-2, which 14 hex digits hold. A double
 * holds that sum inexactly, so it is written as two halves of 28 bits (7 digits each), each exact,
 * with no BigInt (a page decodes 51 members, and BigInt was most of their cost).
 */
const HALF = 2 ** 28;
const HALF_DIGITS = 7;
/** 2^53-1 = OFFSET_HIGH * 2^28 + (2^28 - 1). */
const OFFSET_HIGH = 2 ** 25 - 1;
const VALUE_DIGITS = 2 * HALF_DIGITS;
const TIME_DIGITS = 12;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const MEMBER = new RegExp(`^[0-9a-f]{${2 * VALUE_DIGITS + TIME_DIGITS}}${UUID}$`);

function valueHex(value: number): string {
  // value = q * 2^28 + r with 0 <= r < 2^28, both exact (a division by a power of two).
  const q = Math.floor(value / HALF);
  const r = value - q * HALF;
  // Adding the offset's low half (2^28 - 1) to r carries into the high half unless r is 0.
  const high = r === 0 ? q + OFFSET_HIGH : q + OFFSET_HIGH + 1;
  const low = r === 0 ? HALF - 1 : r - 1;
  return high.toString(16).padStart(HALF_DIGITS, '0') + low.toString(16).padStart(HALF_DIGITS, '0');
}

/** The value of 14 digits; outside ±(2^53-1) (a forged member) it is no safe integer. */
function valueFromHex(hex: string): number {
  const high = Number.parseInt(hex.slice(0, HALF_DIGITS), 16) - OFFSET_HIGH;
  const low = Number.parseInt(hex.slice(HALF_DIGITS), 16) - (HALF - 1);
  // Both terms are exact, and so is their sum whenever it is a safe integer.
  return high * HALF + low;
}

/** The key as an ordered set member: its byte order is the standings' order. */
export function memberOf(key: RankKey): string {
  return (
    valueHex(key.rankScore) +
    valueHex(key.rankSubscore) +
    key.updatedAt.toString(16).padStart(TIME_DIGITS, '0') +
    key.userId.toLowerCase()
  );
}

/** The key a member encodes, or undefined for a string that is not one (a forged cursor). */
export function keyOfMember(member: string): RankKey | undefined {
  if (!MEMBER.test(member)) return undefined;
  const updatedAt = Number.parseInt(member.slice(2 * VALUE_DIGITS, 2 * VALUE_DIGITS + TIME_DIGITS), 16);
  const rankScore = valueFromHex(member.slice(0, VALUE_DIGITS));
  const rankSubscore = valueFromHex(member.slice(VALUE_DIGITS, 2 * VALUE_DIGITS));
  if (![rankScore, rankSubscore].every(Number.isSafeInteger)) return undefined;
  return { rankScore, rankSubscore, updatedAt, userId: member.slice(2 * VALUE_DIGITS + TIME_DIGITS) };
}

/** A page's cursor: the last record's member, opaque to clients. */
export const cursorOf = (key: RankKey) => Buffer.from(memberOf(key)).toString('base64url');

/** The key a cursor names, or undefined when it is not one this list gave out. */
export function keyOfCursor(cursor: string): RankKey | undefined {
  return keyOfMember(Buffer.from(cursor, 'base64url').toString('latin1'));
}
