import { z } from 'zod';

/**
 * The validators settings are declared with, shared by src/config.ts and each module's
 * `<domain>.config.ts` so every variable refuses a bad value with the same kind of message.
 * Each takes the environment's string and gives the typed value, or its default when unset.
 */

export const intInRange = (fallback: number, min: number, max: number) => {
  const allowed = `must be an integer from ${min} to ${max}`;
  return z.coerce
    .number({ error: allowed })
    .int(allowed)
    .min(min, allowed)
    .max(max, allowed)
    .default(fallback);
};
export const positiveInt = (fallback: number, max = 2 ** 31 - 1) => intInRange(fallback, 1, max);
export const port = (fallback: number) => intInRange(fallback, 0, 65535);

/**
 * How many processes serve: an integer, or `auto` (kept as the word, so the settings view shows
 * what the operator set; `serve` resolves it to the host's cores when it forks). Unset, one: the
 * embedded mode's count, which src/config.ts replaces with `auto` in production mode.
 */
export const processCount = (max: number) => {
  const allowed = `must be auto or an integer from 1 to ${max}`;
  return z
    .string()
    .refine((value) => value === 'auto' || (/^\d+$/.test(value) && +value >= 1 && +value <= max), allowed)
    .transform((value): number | 'auto' => (value === 'auto' ? 'auto' : Number(value)))
    .default(1);
};

export const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be one of true, false, 1, 0, yes, no' })
    .transform((v) => v === 'true' || v === '1' || v === 'yes')
    .default(fallback);

export const url = (protocols: string[]) =>
  z
    .string()
    .refine(
      (value) => {
        try {
          return protocols.includes(new URL(value).protocol);
        } catch {
          return false;
        }
      },
      { message: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}` },
    )
    .optional();

export const pem = (label: string) =>
  z
    .string()
    .transform((value) => value.replaceAll('\\n', '\n'))
    .refine((value) => value.includes(`-----BEGIN ${label}-----`), {
      message: `must be PEM text containing -----BEGIN ${label}-----`,
    })
    .optional();

export interface HostPort {
  host: string;
  port: number;
}

/**
 * `host:port` pairs separated by commas (an IPv6 host in brackets, `[::1]:6379`), or undefined when
 * any of them is malformed or names port 0.
 */
export function parseHostPorts(text: string): HostPort[] | undefined {
  const parsed: HostPort[] = [];
  for (const pair of text.split(',')) {
    const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/.exec(pair.trim());
    const port = Number(match?.[3]);
    const host = match?.[1] ?? match?.[2];
    if (!host || !(port >= 1 && port <= 65535)) return undefined;
    parsed.push({ host, port });
  }
  return parsed;
}

/** Kept as the text given (so admins see it as written); parseHostPorts reads it where it is used. */
export const hostPortList = () =>
  z
    .string()
    .refine((value) => parseHostPorts(value) !== undefined, {
      message: 'must be host:port pairs separated by commas',
    })
    .optional();
