import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newSecret, signedHeaders } from '../../src/modules/webhooks/signing.js';

/** The contract's definition, computed without the package. */
function hmacOf(secret: string, id: string, timestamp: string, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64');
}

const ID = '01J9ZQ4W8Y3N5V6T7R8S9P0QAB';
const BODY = JSON.stringify({
  id: ID,
  type: 'user.registered',
  created_at: '2024-05-01T12:00:00.000Z',
  data: { user: { id: 'u1', username: 'zoë — ☃', created_at: '2024-05-01T12:00:00.000Z' } },
});

describe('webhook signing', () => {
  it('makes secrets of whsec_ and the padded standard base64 of 32 random bytes', () => {
    const secrets = Array.from({ length: 20 }, newSecret);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    }
    expect(new Set(secrets).size).toBe(secrets.length);
  });

  it('signs v1 HMAC-SHA256 of "<id>.<timestamp>.<body>" keyed with the bytes after whsec_', () => {
    const secret = newSecret();
    const headers = signedHeaders(ID, BODY, [secret], new Date('2024-05-01T12:00:07.999Z'));
    expect(headers).toEqual({
      'webhook-id': ID,
      'webhook-timestamp': '1714564807',
      'webhook-signature': `v1,${hmacOf(secret, ID, '1714564807', BODY)}`,
    });
  });

  it("reproduces the Standard Webhooks specification's published test vector", () => {
    const headers = signedHeaders(
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      '{"test": 2432232314}',
      ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      new Date(1_614_265_330_000),
    );
    expect(headers['webhook-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('signs with the new secret first, then the previous one, separated by one space, during a rotation', () => {
    const [current, previous] = [newSecret(), newSecret()];
    const headers = signedHeaders(ID, BODY, [current, previous], new Date('2024-05-01T12:00:00Z'));
    const stamp = headers['webhook-timestamp'];
    expect(headers['webhook-signature']).toBe(
      `v1,${hmacOf(current, ID, stamp, BODY)} v1,${hmacOf(previous, ID, stamp, BODY)}`,
    );
  });

  it('is verified by a receiver holding either secret during a rotation, and by neither other', () => {
    const [current, previous, other] = [newSecret(), newSecret(), newSecret()];
    const headers = signedHeaders(ID, BODY, [current, previous], new Date());
    expect(new Webhook(current).verify(BODY, { ...headers })).toEqual(JSON.parse(BODY));
    expect(new Webhook(previous).verify(BODY, { ...headers })).toEqual(JSON.parse(BODY));
    expect(() => new Webhook(other).verify(BODY, { ...headers })).toThrow('No matching signature found');
    expect(() => new Webhook(current).verify(`${BODY} `, { ...headers })).toThrow(
      'No matching signature found',
    );
  });

  it('stamps unix seconds of the given time, rounded down', () => {
    const headers = signedHeaders(ID, BODY, [newSecret()], new Date(1_700_000_000_999));
    expect(headers['webhook-timestamp']).toBe('1700000000');
  });
});
