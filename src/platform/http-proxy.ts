import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Which peers may say who the client is through `X-Forwarded-For`. Each proxy appends the
 * address it received the request from, so only the entries added by proxies we run can be
 * believed; everything to their left was written by the client and may be forged.
 */
export type TrustedProxies = false | { hops: number } | { addresses: string[] };

const MAX_HOPS = 10;
/** Range names that proxy-addr, which Fastify uses to read the header, understands. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

const forms =
  `false, the number of proxies in front of the service (1 to ${MAX_HOPS}), or a comma-separated ` +
  'list of proxy addresses or CIDRs (loopback, linklocal and uniquelocal name those ranges)';

function isAddressOrCidr(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  // A /0 would trust every peer, which is what `true` did.
  return /^\d{1,3}$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (version === 4 ? 32 : 128);
}

/**
 * The TRUST_PROXY setting. `true` is refused rather than reinterpreted: it used to trust every
 * entry, so the client's own leftmost entry became its address, and guessing a hop count for it
 * would silently key every client on one proxy's address in a deployment with two proxies.
 */
export const trustProxySetting = z
  .string()
  .transform((value, ctx): TrustedProxies => {
    const lowered = value.toLowerCase();
    if (lowered === 'false' || lowered === 'no' || lowered === '0') return false;
    if (lowered === 'true' || lowered === 'yes') {
      ctx.issues.push({
        code: 'custom',
        input: value,
        message: `no longer accepts true, which let clients forge their address in X-Forwarded-For: set ${forms}`,
      });
      return z.NEVER;
    }
    if (/^\d+$/.test(value)) {
      const hops = Number(value);
      if (hops >= 1 && hops <= MAX_HOPS) return { hops };
    } else {
      const addresses = value.split(',').map((entry) => entry.trim());
      if (addresses.every(isAddressOrCidr)) return { addresses };
    }
    ctx.issues.push({ code: 'custom', input: value, message: `must be ${forms}` });
    return z.NEVER;
  })
  .default(false);

/**
 * Fastify's `trustProxy` option for a setting. Fastify refuses plain hop counts (it cannot tell
 * whether the peer is a proxy at all), so a count becomes a function trusting that many hops: the
 * socket peer and the entries nearest to it, which leaves the client `hops` entries from the right.
 */
export function fastifyTrustProxy(
  setting: TrustedProxies,
): false | string[] | ((address: string, hop: number) => boolean) {
  if (setting === false) return false;
  if ('addresses' in setting) return setting.addresses;
  const { hops } = setting;
  return (_address, hop) => hop < hops;
}
