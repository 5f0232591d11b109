import { z } from 'zod';

/** Decimal digits with an optional leading minus: the only spelling of an integer in a URL. */
const DECIMAL = /^-?\d{1,20}$/;

/**
 * An integer from a path segment or a query string (text), or from a frame (a number), from
 * `min` to `max`. Text must be decimal digits with an optional leading minus: `z.coerce.number`
 * also read ` ` and `` as 0, `0x10` as 16 and `1e3` as 1000, so one resource had many URLs and a
 * typo named another chunk. Anything else stays text and fails as not a number (422).
 */
export function wireInteger(min: number, max: number) {
  return z.preprocess(fromText, integer(min, max));
}

/** wireInteger with the value an absent field takes (documented as the schema's default). */
export function wireIntegerOr(fallback: number, min: number, max: number) {
  return z.preprocess(fromText, integer(min, max).default(fallback));
}

const integer = (min: number, max: number) =>
  z
    .number({ error: 'must be an integer in decimal digits, with an optional leading minus' })
    .int()
    .min(min)
    .max(max);

const fromText = (value: unknown) =>
  typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value;
