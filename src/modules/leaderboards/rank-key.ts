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

/** Shifts ±(2^53-1) to 0..2^54-2, which 14 hex digits hold. */
const OFFSET = 2n ** 53n - 1n;
const VALUE_DIGITS = 14;
const TIME_DIGITS = 12;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const MEMBER = new RegExp(`^[0-9a-f]{${2 * VALUE_DIGITS + TIME_DIGITS}}${UUID}$`);

const valueHex = (value: number) => (BigInt(value) + OFFSET).toString(16).padStart(VALUE_DIGITS, '0');
const valueFromHex = (hex: string) => Number(BigInt(`0x${hex}`) - OFFSET);

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
