import { describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { createHttpServer } from '../../src/platform/http.js';
import { createLogger } from '../../src/platform/log.js';
import { createMetrics } from '../../src/platform/metrics.js';
import { login, PASSWORD, registerUser, uniqueUsername } from '../helpers/accounts.js';
import { type TestApp, useTestApp } from '../helpers/app.js';

/** The address of the proxy in front of the service, as the service's socket sees it. */
const PROXY = '10.0.0.5';

function register(app: TestApp, remoteAddress: string, forwardedFor: string) {
  return app.http.inject({
    method: 'POST',
    url: '/api/auth/register',
    remoteAddress,
    headers: { 'x-forwarded-for': forwardedFor },
    payload: { username: uniqueUsername(), password: PASSWORD, accept_terms: true, confirm_18_plus: true },
  });
}

/**
 * Which address the per-IP limits key on behind proxies: the one the trusted proxies report,
 * never an X-Forwarded-For entry the client wrote itself.
 */
describe('client address behind one proxy (TRUST_PROXY=1)', () => {
  const app = useTestApp({ TRUST_PROXY: 1, LOGIN_IP_MAX_ATTEMPTS: 2, REGISTER_IP_MAX_ATTEMPTS: 2 });

  it('limits logins by the address the proxy appended, whatever the client forges to its left', async () => {
    const username = uniqueUsername();
    await registerUser(app(), username);
    for (const forged of ['1.2.3.4', '5.6.7.8'])
      expect(
        (
          await login(app(), username, PASSWORD, {
            remoteAddress: PROXY,
            forwardedFor: `${forged}, 203.0.113.7`,
          })
        ).statusCode,
      ).toBe(200);
    const limited = await login(app(), username, PASSWORD, {
      remoteAddress: PROXY,
      forwardedFor: '9.9.9.9, 203.0.113.7',
    });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(limited.json()).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(
      (await login(app(), username, PASSWORD, { remoteAddress: PROXY, forwardedFor: '9.9.9.9, 203.0.113.8' }))
        .statusCode,
    ).toBe(200);
  });

  it('limits registrations by the address the proxy appended, whatever the client forges to its left', async () => {
    for (const forged of ['1.2.3.4', '5.6.7.8'])
      expect((await register(app(), PROXY, `${forged}, 198.51.100.7`)).statusCode).toBe(201);
    const limited = await register(app(), PROXY, '9.9.9.9, 198.51.100.7');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect((await register(app(), PROXY, '198.51.100.8')).statusCode).toBe(201);
  });
});

describe('client address behind listed proxies (TRUST_PROXY=10.0.0.0/8)', () => {
  const app = useTestApp({ TRUST_PROXY: '10.0.0.0/8', LOGIN_IP_MAX_ATTEMPTS: 2 });

  it('takes the nearest address no listed proxy owns, past any number of listed proxies', async () => {
    const username = uniqueUsername();
    await registerUser(app(), username);
    expect(
      (
        await login(app(), username, PASSWORD, {
          remoteAddress: PROXY,
          forwardedFor: '1.2.3.4, 203.0.113.20, 10.0.0.9',
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await login(app(), username, PASSWORD, {
          remoteAddress: PROXY,
          forwardedFor: '5.6.7.8, 203.0.113.20',
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (await login(app(), username, PASSWORD, { remoteAddress: PROXY, forwardedFor: '203.0.113.20' }))
        .statusCode,
    ).toBe(429);
  });

  it('ignores X-Forwarded-For from a peer that is not a listed proxy', async () => {
    const username = uniqueUsername();
    await registerUser(app(), username);
    const direct = '192.0.2.50';
    for (const forged of ['203.0.113.31', '203.0.113.32'])
      expect(
        (await login(app(), username, PASSWORD, { remoteAddress: direct, forwardedFor: forged })).statusCode,
      ).toBe(200);
    expect(
      (await login(app(), username, PASSWORD, { remoteAddress: direct, forwardedFor: '203.0.113.33' }))
        .statusCode,
    ).toBe(429);
    // The forged addresses were never charged: a proxy reporting one of them still gets through.
    expect(
      (await login(app(), username, PASSWORD, { remoteAddress: PROXY, forwardedFor: '203.0.113.31' }))
        .statusCode,
    ).toBe(200);
  });
});

describe('request.ip under each TRUST_PROXY form', () => {
  const ipFor = async (trustProxy: string, remoteAddress: string, forwardedFor: string) => {
    const config = configFrom({ LOG_LEVEL: 'silent', TRUST_PROXY: trustProxy });
    const http = await createHttpServer({ config, log: createLogger(config), metrics: createMetrics() });
    http.get('/ip', async (request) => ({ ip: request.ip }));
    try {
      const response = await http.inject({
        method: 'GET',
        url: '/ip',
        remoteAddress,
        headers: { 'x-forwarded-for': forwardedFor },
      });
      return (response.json() as { ip: string }).ip;
    } finally {
      await http.close();
    }
  };

  it('uses the socket address and ignores X-Forwarded-For when no proxy is trusted', async () => {
    expect(await ipFor('false', '192.0.2.1', '1.2.3.4')).toBe('192.0.2.1');
  });

  it('takes the entry as many places from the right as there are proxies', async () => {
    expect(await ipFor('1', PROXY, '1.2.3.4, 203.0.113.1, 10.0.0.9')).toBe('10.0.0.9');
    expect(await ipFor('2', PROXY, '1.2.3.4, 203.0.113.1, 10.0.0.9')).toBe('203.0.113.1');
  });
});
