import { isDeepStrictEqual } from 'node:util';

/**
 * Verdicts on answers: whether an answer is one the contract allows for a request in the model's
 * state, and if so what it changes. Where timing decides (a refund racing the end of its hold),
 * every legal outcome is accepted and the one that happened is applied.
 */

export interface Answer {
  status: number;
  /** The answer carried `Idempotent-Replayed: true`. */
  replayed: boolean;
  body: unknown;
}

/** When the request was first sent and finally answered (ms), and whether an attempt went unanswered. */
export interface Timing {
  sentAt: number;
  answeredAt: number;
  uncertain: boolean;
}

export type Verdict = { ok: true; apply: () => void } | { ok: false; expected: string };

export const ok = (apply: () => void = () => {}): Verdict => ({ ok: true, apply });
export const no = (expected: string): Verdict => ({ ok: false, expected });

/** The first legal verdict, or every alternative's expectation. */
export function anyOf(...verdicts: Verdict[]): Verdict {
  const legal = verdicts.find((v) => v.ok);
  if (legal) return legal;
  return no(verdicts.map((v) => (v.ok ? '' : v.expected)).join(' or '));
}

type Body = Record<string, unknown>;

export function bodyOf(answer: Answer): Body {
  return typeof answer.body === 'object' && answer.body !== null ? (answer.body as Body) : {};
}

/** A problem answer with `status` and `code`, and these members when given. */
export function refusal(answer: Answer, status: number, code: string, details: Body = {}): Verdict {
  const expected = `${status} ${code}${Object.keys(details).length ? ` ${JSON.stringify(details)}` : ''}`;
  if (answer.status !== status || bodyOf(answer).code !== code) return no(expected);
  for (const [name, value] of Object.entries(details)) {
    if (!isDeepStrictEqual(bodyOf(answer)[name], value)) return no(expected);
  }
  return ok();
}

/** A success with `status` whose body holds `fields`; `apply` runs if it is accepted. */
export function success(answer: Answer, status: number, fields: Body, apply: () => void): Verdict {
  const expected = `${status} with ${JSON.stringify(fields)}`;
  if (answer.status !== status) return no(expected);
  const body = bodyOf(answer);
  for (const [name, value] of Object.entries(fields)) {
    if (!isDeepStrictEqual(body[name], value)) return no(expected);
  }
  return ok(apply);
}

/** A server time (ISO string) the request could have been served at, give or take rounding. */
export function servedWithin(iso: unknown, timing: Timing): boolean {
  const at = typeof iso === 'string' ? Date.parse(iso) : Number.NaN;
  return at >= timing.sentAt - 1 && at <= timing.answeredAt + 1;
}
