import { describe, expect, it } from 'vitest';
import type { Setting } from '../../protocol/settings.js';
import { isSecretSetting, settingInForce, withoutCredentials } from '../../src/platform/config-in-force.js';
import { bearer, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';

const PEM = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----';

/** GET /api/admin/config: the settings in force, secrets redacted, for admins only. */
describe('GET /api/admin/config', () => {
  const app = useTestApp({ ECONOMY_FEE_BPS: 2500 });
  const read = (token: string, query = '') =>
    app().http.inject({ method: 'GET', url: `/api/admin/config${query}`, headers: bearer(token) });

  it('shows an admin every setting with its declaring part and its value as parsed', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const response = await read(admin.access_token);
    expect(response.statusCode).toBe(200);
    const settings = response.json().settings as Setting[];
    expect(settings).toContainEqual({
      name: 'ECONOMY_FEE_BPS',
      part: 'economy',
      value: 2500,
      redacted: false,
    });
    expect(settings).toContainEqual({ name: 'HTTP_PORT', part: 'platform', value: 0, redacted: false });
    expect(settings).toContainEqual({
      name: 'JWT_SIGNING_KEY_PEM',
      part: 'platform',
      value: null,
      redacted: false,
    });
    expect(new Set(settings.map((s) => s.name)).size).toBe(settings.length);
  });

  it.each(['moderator', 'user'] as const)('refuses a %s with 403 FORBIDDEN', async (role) => {
    const caller = role === 'user' ? await registerUser(app()) : await registerWithRole(app(), role);
    const response = await read(caller.access_token);
    expect(response.statusCode).toBe(403);
    expect(response.json().code).toBe('FORBIDDEN');
  });

  it('refuses an unknown query parameter with 422', async () => {
    const admin = await registerWithRole(app(), 'admin');
    const response = await read(admin.access_token, '?all=1');
    expect(response.statusCode).toBe(422);
  });
});

describe('what the configuration view redacts', () => {
  it('keeps a URL’s host and user but withholds its password and query values', () => {
    expect(
      settingInForce('platform', 'DATABASE_URL', 'postgres://atrium:hunter2@db:5432/atrium?sslkey=/k'),
    ).toEqual({
      name: 'DATABASE_URL',
      part: 'platform',
      value: 'postgres://atrium:%5Bredacted%5D@db:5432/atrium?sslkey=%5Bredacted%5D',
      redacted: true,
    });
    expect(settingInForce('platform', 'REDIS_URL', 'redis://cache:6379')).toEqual({
      name: 'REDIS_URL',
      part: 'platform',
      value: 'redis://cache:6379',
      redacted: false,
    });
  });

  it('withholds key material and any setting named like a credential, but not a token lifetime', () => {
    expect(settingInForce('platform', 'JWT_SIGNING_KEY_PEM', PEM)).toMatchObject({
      value: '[redacted]',
      redacted: true,
    });
    for (const name of ['WEBHOOK_SECRET', 'SMTP_PASSWORD', 'AGONES_API_KEY', 'ADMIN_TOKEN']) {
      expect(isSecretSetting(name), name).toBe(true);
    }
    for (const name of ['ACCESS_TOKEN_TTL_SECONDS', 'REFRESH_TOKEN_TTL_SECONDS', 'JWT_SIGNING_KEY_ID']) {
      expect(isSecretSetting(name), name).toBe(false);
    }
  });

  it('leaves text that is not a URL alone', () => {
    expect(withoutCredentials('node ./game-server.js')).toBeUndefined();
    expect(settingInForce('gameservers', 'GAMESERVER_COMMAND', 'node ./game-server.js').value).toBe(
      'node ./game-server.js',
    );
  });
});
