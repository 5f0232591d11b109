import { describe, expect, it } from 'vitest';
import { callsAs, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';

const worldsOf = async (app: () => { db: Parameters<typeof queryRows>[0] }, ownerId: string) =>
  Number(
    (
      await queryRows<{ n: string }>(app().db, 'select count(*)::text as n from worlds where owner_id = ?', [
        ownerId,
      ])
    )[0]?.n,
  );

describe('world quotas', () => {
  const app = useTestApp({ MAX_WORLDS_PER_USER: 3, MAX_ROOMS_PER_WORLD: 2, CREATE_RATE_LIMIT_COUNT: 1000 });
  const { call, expectStatus } = callsAs(app);

  it('refuses a world past MAX_WORLDS_PER_USER with 409 QUOTA_EXCEEDED and the limit, even when all are created at once', async () => {
    const owner = await registerUser(app());
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call('POST', '/api/worlds', owner, { name: `World ${i}` })),
    );
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 201, 201, 409, 409, 409, 409, 409]);
    for (const refused of answers.filter((a) => a.statusCode === 409))
      expect(refused.json()).toMatchObject({ code: 'QUOTA_EXCEEDED', limit: 3 });
    expect(await worldsOf(app, owner.user.id)).toBe(3);
  });

  it('counts worlds per owner: another user still creates, and deleting one frees a place', async () => {
    const [owner, other] = await Promise.all([registerUser(app()), registerUser(app())]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await expectStatus(201, 'POST', '/api/worlds', owner, { name: 'W' })).json().id);
    await expectStatus(409, 'POST', '/api/worlds', owner, { name: 'W' });
    await expectStatus(201, 'POST', '/api/worlds', other, { name: 'W' });
    await expectStatus(204, 'DELETE', `/api/worlds/${ids[0]}`, owner);
    await expectStatus(201, 'POST', '/api/worlds', owner, { name: 'W' });
  });

  it('refuses a room past MAX_ROOMS_PER_WORLD with 409 QUOTA_EXCEEDED, even when asked at once', async () => {
    const owner = await registerUser(app());
    const { id } = (await expectStatus(201, 'POST', '/api/worlds', owner, { name: 'Rooms' })).json();
    const answers = await Promise.all(
      ['a', 'b', 'c', 'd'].map((name) => call('POST', `/api/worlds/${id}/rooms`, owner, { name })),
    );
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 409, 409, 409]);
    expect(answers.find((a) => a.statusCode === 409)?.json()).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      limit: 2,
    });
    const [rooms] = await queryRows<{ n: string }>(
      app().db,
      'select count(*)::text as n from rooms where world_id = ?',
      [id],
    );
    expect(rooms?.n).toBe('2');
  });
});

describe('the world creation rate', () => {
  const app = useTestApp({ CREATE_RATE_LIMIT_COUNT: 2, CREATE_RATE_LIMIT_WINDOW_SECONDS: 60 });
  const { call, expectStatus } = callsAs(app);

  it('answers 429 RATE_LIMITED with Retry-After past CREATE_RATE_LIMIT_COUNT a window, creating nothing', async () => {
    const [owner, other] = await Promise.all([registerUser(app()), registerUser(app())]);
    await expectStatus(201, 'POST', '/api/worlds', owner, { name: 'one' });
    await expectStatus(201, 'POST', '/api/worlds', owner, { name: 'two' });
    const refused = await call('POST', '/api/worlds', owner, { name: 'three' });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await worldsOf(app, owner.user.id)).toBe(2);
    // The limit is the user's own.
    await expectStatus(201, 'POST', '/api/worlds', other, { name: 'theirs' });
  });
});
