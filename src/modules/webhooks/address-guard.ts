/**
 * The address rules of webhook URLs (docs: the contract's "Address rules (SSRF)"): which URLs an
 * endpoint may have, and which addresses a delivery may connect to.
 *
 * A URL passes when it is an absolute http(s) URL of at most 2048 characters without userinfo or
 * fragment, and its host, as WHATWG `URL` normalises it (`http://2852039166/` is 169.254.169.254),
 * is an IP literal that passes or a name whose every resolved address passes. The answer carries
 * those addresses: a delivery connects to one of them and never resolves the name again, so a
 * name that resolves to a public address at the check and to 127.0.0.1 a moment later (DNS
 * rebinding) cannot reach 127.0.0.1.
 *
 * Why a guard of our own rather than a request-filtering agent (request-filtering-agent, the
 * maintained one): such an agent judges the addresses of its own lookup at connect time, so it
 * cannot answer the 422 at creation, and the attempt would then judge the name twice, by two rule
 * sets. Its rules are not the contract's either: allowing private networks there also allows
 * link-local 169.254.169.254, which the contract always refuses. Checking here and connecting to
 * the checked address (signed-request.ts) needs no second lookup and no dependency.
 */
import { promises as dns } from 'node:dns';
import { BlockList, isIP } from 'node:net';

export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

/** A URL that passed, with the addresses that were judged (one at least): connect to one of these only. */
export interface CheckedTarget {
  url: URL;
  addresses: [CheckedAddress, ...CheckedAddress[]];
}

/**
 * `reason` is a phrase that follows the field's name (`body.url: names 10.0.0.1, a private
 * address ...`), short enough for a 422 message or a delivery's `last_error`.
 */
export type UrlCheck = { ok: true; target: CheckedTarget } | { ok: false; reason: string };

/** Every address a name resolves to; an error or an empty list means it does not resolve. */
export type Resolve = (hostname: string) => Promise<readonly { address: string }[]>;

export interface GuardOptions {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: loopback, private and CGNAT ranges pass too. */
  allowPrivateNetworks: boolean;
  /** Injected by tests; the system resolver otherwise. */
  resolve?: Resolve;
}

const MAX_URL_LENGTH = 2048;

const systemResolve: Resolve = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

interface Range {
  kind: string;
  /** Refused even when private networks are allowed. */
  always: boolean;
  list: BlockList;
}

function range(kind: string, always: boolean, ...cidrs: string[]): Range {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network = '', prefix] = cidr.split('/');
    list.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4');
  }
  return { kind, always, list };
}

/**
 * The contract's ranges. BlockList judges an IPv4-mapped IPv6 address (`::ffff:7f00:1`, which is
 * also how `URL` writes `[::ffff:127.0.0.1]`) by the IPv4 rules, as the contract asks.
 */
const RANGES = [
  range('link-local', true, '169.254.0.0/16', 'fe80::/10'),
  range('unspecified', true, '0.0.0.0/8', '::/128'),
  range('multicast', true, '224.0.0.0/4', 'ff00::/8'),
  range('broadcast', true, '255.255.255.255/32'),
  range('loopback', false, '127.0.0.0/8', '::1/128'),
  range('private', false, '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'),
  range('shared (CGNAT)', false, '100.64.0.0/10'),
];

/** Why `address` is refused, or undefined when it passes. */
function refusal(address: string, family: number, allowPrivateNetworks: boolean): string | undefined {
  const hit = RANGES.find(({ list }) => list.check(address, family === 4 ? 'ipv4' : 'ipv6'));
  if (!hit || (!hit.always && allowPrivateNetworks)) return undefined;
  const article = /^[aeiou]/.test(hit.kind) ? 'an' : 'a';
  return `${address}, ${article} ${hit.kind} address${hit.always ? '' : ' (private networks are not allowed)'}`;
}

function syntaxRefusal(text: string): string | URL {
  if (text.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password';
  // `href` keeps the `#` of an empty fragment, which `hash` does not show.
  if (url.href.includes('#')) return 'must not contain a fragment';
  return url;
}

async function resolved(hostname: string, resolve: Resolve): Promise<string[]> {
  try {
    return (await resolve(hostname)).map(({ address }) => address);
  } catch {
    return [];
  }
}

/** Judges a webhook URL by the address rules, resolving its host name with `options.resolve`. */
export async function checkUrl(text: string, options: GuardOptions): Promise<UrlCheck> {
  const url = syntaxRefusal(text);
  if (typeof url === 'string') return { ok: false, reason: url };
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host) !== 0;
  const found = literal ? [host] : await resolved(host, options.resolve ?? systemResolve);
  if (found.length === 0) return { ok: false, reason: `names ${host}, which does not resolve` };
  const addresses: CheckedAddress[] = [];
  for (const address of found) {
    const family = isIP(address);
    // An answer that is not an address cannot be judged, so it cannot pass.
    const refused =
      family === 0 ? `${address}, not an IP address` : refusal(address, family, options.allowPrivateNetworks);
    if (refused)
      return {
        ok: false,
        reason: literal ? `names ${refused}` : `names ${host}, which resolves to ${refused}`,
      };
    addresses.push({ address, family: family === 6 ? 6 : 4 });
  }
  return { ok: true, target: { url, addresses: addresses as CheckedTarget['addresses'] } };
}
