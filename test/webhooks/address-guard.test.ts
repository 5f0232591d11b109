import { describe, expect, it } from 'vitest';
import { checkUrl, type GuardOptions, type Resolve } from '../../src/modules/webhooks/address-guard.js';

const PUBLIC_V4 = '93.184.216.34';
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946';

/** A resolver that knows only `table`; any other name fails as an unknown name does. */
function resolverOf(table: Record<string, string[]>): Resolve {
  return async (hostname) => {
    const addresses = table[hostname];
    if (!addresses)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address }));
  };
}

const strict: GuardOptions = { allowPrivateNetworks: false, resolve: resolverOf({}) };
const lenient: GuardOptions = { allowPrivateNetworks: true, resolve: resolverOf({}) };

async function reasonOf(url: string, options: GuardOptions = strict): Promise<string | undefined> {
  const check = await checkUrl(url, options);
  return check.ok ? undefined : check.reason;
}

/** One address of each always-refused range, as a URL host. */
const alwaysRefused = [
  ['169.254.0.0/16 (cloud metadata)', '169.254.169.254', 'link-local'],
  ['169.254.0.0/16, its first address', '169.254.0.1', 'link-local'],
  ['fe80::/10', '[fe80::1]', 'link-local'],
  ['fe80::/10, its last block', '[febf::1]', 'link-local'],
  ['0.0.0.0/8', '0.0.0.0', 'unspecified'],
  ['0.0.0.0/8, another address', '0.1.2.3', 'unspecified'],
  ['::', '[::]', 'unspecified'],
  ['224.0.0.0/4', '224.0.0.1', 'multicast'],
  ['224.0.0.0/4, its last block', '239.255.255.250', 'multicast'],
  ['ff00::/8', '[ff02::1]', 'multicast'],
  ['255.255.255.255', '255.255.255.255', 'broadcast'],
] as const;

/** One address of each range refused unless private networks are allowed. */
const privateRanges = [
  ['127.0.0.0/8', '127.0.0.1', 'loopback'],
  ['127.0.0.0/8, another address', '127.255.0.9', 'loopback'],
  ['::1', '[::1]', 'loopback'],
  ['10.0.0.0/8', '10.1.2.3', 'private'],
  ['172.16.0.0/12', '172.16.0.1', 'private'],
  ['172.16.0.0/12, its last block', '172.31.255.254', 'private'],
  ['192.168.0.0/16', '192.168.1.1', 'private'],
  ['fc00::/7', '[fc00::1]', 'private'],
  ['fc00::/7, its fd half', '[fd12:3456::1]', 'private'],
  ['100.64.0.0/10', '100.64.0.1', 'shared (CGNAT)'],
  ['100.64.0.0/10, its last block', '100.127.255.254', 'shared (CGNAT)'],
] as const;

/** Neighbours of the ranges, which are public. */
const publicNeighbours = [
  '169.253.255.255',
  '169.255.0.1',
  '1.0.0.1',
  '223.255.255.255',
  '126.255.255.255',
  '128.0.0.1',
  '11.0.0.1',
  '172.15.255.255',
  '172.32.0.1',
  '192.169.0.1',
  '100.63.255.255',
  '100.128.0.1',
  `[${PUBLIC_V6}]`,
  '[fec0::1]',
  '[fe00::1]',
  '[::2]',
];

describe('address rules: IP literals', () => {
  it.each(alwaysRefused)('refuses %s even when private networks are allowed', async (_range, host, kind) => {
    for (const options of [strict, lenient]) {
      const reason = await reasonOf(`https://${host}/hook`, options);
      expect(reason).toContain(`a${kind === 'unspecified' ? 'n' : ''} ${kind} address`);
      expect(reason).not.toContain('private networks');
    }
  });

  it.each(privateRanges)('refuses %s unless private networks are allowed', async (_range, host, kind) => {
    const article = kind === 'loopback' || kind === 'private' || kind.startsWith('shared') ? 'a' : 'an';
    expect(await reasonOf(`http://${host}:8080/hook`, strict)).toBe(
      `names ${host.replace(/[[\]]/g, '')}, ${article} ${kind} address (private networks are not allowed)`,
    );
    const check = await checkUrl(`http://${host}:8080/hook`, lenient);
    expect(check).toMatchObject({ ok: true });
  });

  it.each(publicNeighbours)('lets the public address %s pass, beside the ranges', async (host) => {
    const check = await checkUrl(`https://${host}/`, strict);
    expect(check).toMatchObject({ ok: true });
  });

  it('answers the URL and the literal address with its family, without resolving anything', async () => {
    const resolve: Resolve = () => Promise.reject(new Error('no lookup expected'));
    const v4 = await checkUrl(`https://${PUBLIC_V4}:8443/a/b?c=d`, { allowPrivateNetworks: false, resolve });
    expect(v4).toEqual({
      ok: true,
      target: {
        url: new URL(`https://${PUBLIC_V4}:8443/a/b?c=d`),
        addresses: [{ address: PUBLIC_V4, family: 4 }],
      },
    });
    const v6 = await checkUrl(`https://[${PUBLIC_V6}]/`, { allowPrivateNetworks: false, resolve });
    expect(v6.ok && v6.target.addresses).toEqual([{ address: PUBLIC_V6, family: 6 }]);
  });

  it.each([
    ['decimal', 'http://2852039166/', '169.254.169.254'],
    ['hexadecimal', 'http://0xA9FEA9FE/', '169.254.169.254'],
    ['dotted hexadecimal', 'http://0x7f.1/', '127.0.0.1'],
    ['dotted octal', 'http://0177.0.0.1/', '127.0.0.1'],
    ['shortened', 'http://127.1/', '127.0.0.1'],
    ['shortened to one zero', 'http://0/', '0.0.0.0'],
  ])('judges a %s IPv4 spelling as the address URL parsing makes of it', async (_spelling, url, address) => {
    expect(await reasonOf(url)).toMatch(new RegExp(`^names ${address.replaceAll('.', '\\.')}, `));
  });

  it.each([
    ['dotted', 'http://[::ffff:169.254.169.254]/', 'link-local'],
    ['hexadecimal', 'http://[::ffff:a9fe:a9fe]/', 'link-local'],
    ['dotted', 'http://[::ffff:127.0.0.1]/', 'loopback'],
    ['hexadecimal', 'http://[::ffff:7f00:1]/', 'loopback'],
    ['written out', 'http://[0:0:0:0:0:ffff:7f00:1]/', 'loopback'],
    ['hexadecimal', 'http://[::ffff:a01:203]/', 'private'],
  ])('judges an IPv4-mapped IPv6 address (%s) as its IPv4 address: %s', async (_spelling, url, kind) => {
    expect(await reasonOf(url)).toContain(`${kind} address`);
  });

  it('lets an IPv4-mapped public address pass and a mapped private one when private networks are allowed', async () => {
    expect(await checkUrl('http://[::ffff:5db8:d822]/', strict)).toMatchObject({ ok: true });
    expect(await checkUrl('http://[::ffff:127.0.0.1]/', lenient)).toMatchObject({ ok: true });
    expect(await reasonOf('http://[::ffff:169.254.169.254]/', lenient)).toContain('link-local');
  });
});

describe('address rules: the URL itself', () => {
  it.each([
    ['a relative URL', '/hooks', 'must be an absolute URL'],
    ['no URL at all', 'not a url', 'must be an absolute URL'],
    ['an empty text', '', 'must be an absolute URL'],
    ['an invalid host', 'http://exa mple.com/', 'must be an absolute URL'],
    ['ftp', 'ftp://example.com/', 'must use http or https'],
    ['file', 'file:///etc/passwd', 'must use http or https'],
    ['javascript', 'javascript:alert(1)', 'must use http or https'],
    ['a user name', 'https://user@example.com/', 'must not contain a user name or password'],
    ['a password', 'https://:secret@example.com/', 'must not contain a user name or password'],
    ['a fragment', 'https://example.com/hook#part', 'must not contain a fragment'],
    ['an empty fragment', 'https://example.com/hook#', 'must not contain a fragment'],
  ])('refuses %s before resolving anything', async (_what, url, reason) => {
    const resolve: Resolve = () => Promise.reject(new Error('no lookup expected'));
    expect(await checkUrl(url, { allowPrivateNetworks: true, resolve })).toEqual({ ok: false, reason });
  });

  it('accepts a URL of 2048 characters and refuses one of 2049', async () => {
    const options = { allowPrivateNetworks: false, resolve: resolverOf({ 'example.com': [PUBLIC_V4] }) };
    const base = 'https://example.com/';
    const longest = base + 'a'.repeat(2048 - base.length);
    expect(await checkUrl(longest, options)).toMatchObject({ ok: true });
    expect(await checkUrl(`${longest}a`, options)).toEqual({
      ok: false,
      reason: 'must be at most 2048 characters',
    });
  });

  it('keeps the path and query of the URL as given', async () => {
    const options = {
      allowPrivateNetworks: false,
      resolve: resolverOf({ 'hooks.example.com': [PUBLIC_V4] }),
    };
    const check = await checkUrl('https://hooks.example.com:8443/in/atrium?token=abc&x=1', options);
    expect(check.ok && check.target.url.href).toBe('https://hooks.example.com:8443/in/atrium?token=abc&x=1');
  });
});

describe('address rules: host names', () => {
  it('judges a name by every address it resolves to and answers them all with their families', async () => {
    const resolve = resolverOf({ 'hooks.example.com': [PUBLIC_V4, PUBLIC_V6] });
    const check = await checkUrl('https://hooks.example.com/in', { allowPrivateNetworks: false, resolve });
    expect(check.ok && check.target.addresses).toEqual([
      { address: PUBLIC_V4, family: 4 },
      { address: PUBLIC_V6, family: 6 },
    ]);
  });

  it('refuses a name when one of its addresses is refused, whichever its place', async () => {
    const resolve = resolverOf({
      'last.example.com': [PUBLIC_V4, PUBLIC_V6, '10.0.0.7'],
      'first.example.com': ['169.254.169.254', PUBLIC_V4],
    });
    const options = { allowPrivateNetworks: false, resolve };
    expect(await reasonOf('https://last.example.com/', options)).toBe(
      'names last.example.com, which resolves to 10.0.0.7, a private address (private networks are not allowed)',
    );
    expect(await reasonOf('https://first.example.com/', { ...options, allowPrivateNetworks: true })).toBe(
      'names first.example.com, which resolves to 169.254.169.254, a link-local address',
    );
  });

  it('lets a name resolving to private addresses pass when private networks are allowed', async () => {
    const resolve = resolverOf({ 'receiver.internal': ['127.0.0.1', '::1', '10.0.0.7'] });
    const check = await checkUrl('http://receiver.internal:9000/', { allowPrivateNetworks: true, resolve });
    expect(check.ok && check.target.addresses.map(({ address }) => address)).toEqual([
      '127.0.0.1',
      '::1',
      '10.0.0.7',
    ]);
  });

  it('judges a resolved IPv4-mapped address as its IPv4 address', async () => {
    const resolve = resolverOf({ 'mapped.example.com': ['::ffff:7f00:1'] });
    expect(await reasonOf('https://mapped.example.com/', { allowPrivateNetworks: false, resolve })).toContain(
      'a loopback address',
    );
  });

  it('refuses a name that does not resolve, and one that resolves to no address', async () => {
    const resolve = resolverOf({ 'empty.example.com': [] });
    const options = { allowPrivateNetworks: true, resolve };
    expect(await reasonOf('https://nowhere.example.com/', options)).toBe(
      'names nowhere.example.com, which does not resolve',
    );
    expect(await reasonOf('https://empty.example.com/', options)).toBe(
      'names empty.example.com, which does not resolve',
    );
  });

  it('refuses a name whose resolver answers something that is not an IP address', async () => {
    const resolve = resolverOf({ 'odd.example.com': [PUBLIC_V4, 'example.net'] });
    expect(await reasonOf('https://odd.example.com/', { allowPrivateNetworks: true, resolve })).toBe(
      'names odd.example.com, which resolves to example.net, not an IP address',
    );
  });

  it('resolves the name as URL parsing normalises it (lower case, punycode)', async () => {
    const asked: string[] = [];
    const resolve: Resolve = async (hostname) => {
      asked.push(hostname);
      return [{ address: PUBLIC_V4 }];
    };
    await checkUrl('https://HOOKS.Example.COM/', { allowPrivateNetworks: false, resolve });
    await checkUrl('https://bücher.example/', { allowPrivateNetworks: false, resolve });
    expect(asked).toEqual(['hooks.example.com', 'xn--bcher-kva.example']);
  });

  it('refuses at the next check a name that resolved to a public address and now resolves to 127.0.0.1', async () => {
    const answers = [[PUBLIC_V4], ['127.0.0.1']];
    const resolve: Resolve = async () => (answers.shift() ?? []).map((address) => ({ address }));
    const options = { allowPrivateNetworks: false, resolve };
    expect(await checkUrl('https://rebind.example.com/', options)).toMatchObject({ ok: true });
    expect(await reasonOf('https://rebind.example.com/', options)).toBe(
      'names rebind.example.com, which resolves to 127.0.0.1, a loopback address (private networks are not allowed)',
    );
  });

  it('asks the system resolver when none is given', async () => {
    const check = await checkUrl('http://localhost:9/', { allowPrivateNetworks: false });
    expect(check.ok).toBe(false);
    expect(!check.ok && check.reason).toMatch(
      /^names localhost, which resolves to (127\.0\.0\.1|::1), a loopback/,
    );
  });
});
