import { beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import {
  cursorField,
  cursorKey,
  decodeCursor,
  encodeCursor,
  isTimeIdKey,
} from '../../src/platform/cursor.js';
import { AppError } from '../../src/platform/errors.js';
import { newId } from '../../src/platform/ids.js';
import { callsAs, registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';

const forged = (...key: unknown[]) => Buffer.from(JSON.stringify(key)).toString('base64url');

describe('the cursor codec', () => {
  it('decodes a key it encoded', () => {
    const key = ['2026-11-25T10:20:30.123456Z', newId()];
    expect(decodeCursor(encodeCursor(key), isTimeIdKey)).toEqual(key);
  });

  it.each([
    ['a leap day', '2024-02-29T00:00:00.000000Z'],
    ['the first instant of year 1', '0001-01-01T00:00:00.000000Z'],
    ['the last microsecond of 9999', '9999-12-31T23:59:59.999999Z'],
  ])('accepts %s', (_name, time) => {
    expect(decodeCursor(forged(time, newId()), isTimeIdKey)).toEqual([time, expect.any(String)]);
  });

  it.each([
    ['month 13 and day 45', '2026-13-45T99:99:99.000000Z'],
    ['February 29th of a common year', '2026-02-29T00:00:00.000000Z'],
    ['February 29th of 1900', '1900-02-29T00:00:00.000000Z'],
    ['April 31st', '2026-04-31T00:00:00.000000Z'],
    ['day zero', '2026-01-00T00:00:00.000000Z'],
    ['year zero', '0000-06-01T00:00:00.000000Z'],
    ['hour 24', '2026-01-01T24:00:00.000000Z'],
    ['a leap second', '2026-06-30T23:59:60.000000Z'],
    ['milliseconds only', '2026-01-01T00:00:00.000Z'],
    ['a local time', '2026-01-01T00:00:00.000000+01:00'],
  ])('refuses a time key with %s as 422 naming the field', (_name, time) => {
    const decode = () => decodeCursor(forged(time, newId()), isTimeIdKey, 'before');
    expect(decode).toThrow(AppError);
    expect(decode).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
    try {
      decode();
    } catch (error) {
      expect((error as AppError).extra.errors).toEqual([{ path: 'before', message: expect.any(String) }]);
    }
  });

  it.each([
    ['an id that is no uuid', forged('2026-01-01T00:00:00.000000Z', 'x')],
    ['a key of three fields', forged('2026-01-01T00:00:00.000000Z', newId(), 1)],
    ['an object', Buffer.from('{"__proto__":1}').toString('base64url')],
    ['base64 of no JSON', Buffer.from('not json').toString('base64url')],
    ['characters outside base64url', '!!!'],
  ])('refuses %s', (_name, cursor) => {
    expect(() => decodeCursor(cursor, isTimeIdKey)).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED' }),
    );
  });

  it('checks chunk coordinates against int32 and revision ids against exact positive integers', () => {
    const chunkKey = cursorKey(cursorField.int32, cursorField.int32, cursorField.int32);
    expect(decodeCursor(forged(-(2 ** 31), 0, 2 ** 31 - 1), chunkKey)).toEqual([-(2 ** 31), 0, 2 ** 31 - 1]);
    expect(() => decodeCursor(forged(2 ** 31, 0, 0), chunkKey)).toThrow(AppError);
    expect(() => decodeCursor(forged(0.5, 0, 0), chunkKey)).toThrow(AppError);
    const revisionKey = cursorKey(cursorField.positive);
    expect(() => decodeCursor(forged(0), revisionKey)).toThrow(AppError);
    expect(() => decodeCursor(forged(2 ** 53), revisionKey)).toThrow(AppError);
  });
});

describe('a forged cursor on the lists', () => {
  const app = useTestApp();
  const { call } = callsAs(app);
  let me: TokenResponse;
  let peer: TokenResponse;
  let moderator: TokenResponse;
  let worldId: string;
  let roomId: string;

  beforeAll(async () => {
    [me, peer, moderator] = await Promise.all([
      registerUser(app()),
      registerUser(app()),
      registerWithRole(app(), 'moderator'),
    ]);
    // A conversation and a world exist, so every list reaches its SQL with the key.
    await call('POST', `/api/chat/dm/${peer.user.id}/messages`, me, { body: 'hello' });
    ({ worldId, mainRoomId: roomId } = await createWorld(app(), me.access_token));
  });

  const impossible = forged('2026-13-45T99:99:99.000000Z', newId());
  const lists: [string, () => string, 'cursor' | 'before', () => TokenResponse][] = [
    ['friends', () => '/api/friends', 'cursor', () => me],
    ['blocks', () => '/api/blocks', 'cursor', () => me],
    ['friend requests', () => '/api/friends/requests?direction=incoming', 'cursor', () => me],
    ['followers', () => `/api/users/${me.user.id}/followers`, 'cursor', () => me],
    ['following', () => `/api/users/${me.user.id}/following`, 'cursor', () => me],
    ['conversations', () => '/api/chat/dm/conversations', 'cursor', () => me],
    ['DM history', () => `/api/chat/dm/${peer.user.id}/messages`, 'before', () => me],
    ['world chat', () => `/api/worlds/${worldId}/messages`, 'before', () => me],
    ['room chat', () => `/api/worlds/${worldId}/rooms/${roomId}/messages`, 'before', () => me],
    ['the moderation queue', () => '/api/moderation/reports?state=open', 'cursor', () => moderator],
  ];

  it.each(lists)('on %s answers 422 naming the cursor, never 500', async (_name, url, field, user) => {
    const path = url();
    const response = await call(
      'GET',
      `${path}${path.includes('?') ? '&' : '?'}${field}=${impossible}`,
      user(),
    );
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json()).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ path: field }] });
  });
});
