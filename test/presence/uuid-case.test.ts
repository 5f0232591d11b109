import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, request } from '../helpers/ws-client.js';

// One app for the file: its parts need the same settings, and each test makes its own users.
const app = useTestApp();

describe('user ids in upper case', () => {
  const { open, closeAll } = openedSockets(() => app().wsUrl);

  afterAll(async () => {
    closeAll();
  });

  it('get one lower-case key with the right status from the REST lookup', async () => {
    const viewer = await registerUser(app());
    const online = await registerUser(app());
    await open(online.access_token);
    const id = online.user.id;
    const response = await app().http.inject({
      method: 'POST',
      url: '/api/presence/presence',
      headers: bearer(viewer.access_token),
      payload: { user_ids: [id.toUpperCase(), id] },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ presence: { [id]: 'online' } });
  });

  it('get one lower-case key with the right status from presence.query', async () => {
    const viewer = await open((await registerUser(app())).access_token);
    const offline = await registerUser(app());
    const id = offline.user.id;
    const reply = await request(viewer, 'presence.query', { user_ids: [id.toUpperCase()] });
    expect(reply).toMatchObject({ t: 'ack' });
    expect(reply.d).toEqual({ presence: { [id]: 'offline' } });
  });

  it('subscribe to and unsubscribe from the same user as the lower-case id', async () => {
    const watcher = await open((await registerUser(app())).access_token);
    const subject = await registerUser(app());
    const upper = subject.user.id.toUpperCase();
    const ack = await request(watcher, 'presence.subscribe', { user_ids: [upper] });
    expect(ack.d).toEqual({ presence: { [subject.user.id]: 'offline' } });
    const subjectSocket = await open(subject.access_token);
    const online = await watcher.next((f) => f.t === 'presence');
    expect(online.d).toMatchObject({ user_id: subject.user.id, status: 'online' });

    expect((await request(watcher, 'presence.unsubscribe', { user_ids: [upper] })).t).toBe('ack');
    subjectSocket.close();
    await expect
      .poll(async () => (await request(watcher, 'presence.query', { user_ids: [upper] })).d)
      .toEqual({ presence: { [subject.user.id]: 'offline' } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(watcher.frames.filter((f) => f.t === 'presence')).toEqual([]);
  });

  it("find the user's public view", async () => {
    const viewer = await registerUser(app());
    const target = await registerUser(app());
    const response = await app().http.inject({
      method: 'GET',
      url: `/api/users/${target.user.id.toUpperCase()}`,
      headers: bearer(viewer.access_token),
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ id: target.user.id, username: target.user.username });
  });
});

describe('user ids that are prototype keys', () => {
  let token: string;
  const { open, closeAll } = openedSockets(() => app().wsUrl);

  beforeAll(async () => {
    token = (await registerUser(app())).access_token;
  });
  afterAll(async () => {
    closeAll();
  });

  it('refuse __proto__ in the REST lookup with 422, as an answer keyed by it could not be sent as msgpack', async () => {
    const response = await app().http.inject({
      method: 'POST',
      url: '/api/presence/presence',
      headers: bearer(token),
      payload: JSON.parse('{"user_ids":["__proto__"]}'),
    });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [{ path: 'body.user_ids.0' }],
    });
  });

  it.each(['presence.query', 'presence.subscribe', 'presence.unsubscribe'])(
    'refuse __proto__ in %s with VALIDATION_FAILED instead of an ack clients cannot decode',
    async (type) => {
      const socket = await open(token);
      const reply = await request(socket, type, { user_ids: ['__proto__'] });
      expect(reply).toMatchObject({
        t: 'error',
        code: 'VALIDATION_FAILED',
        errors: [{ path: 'd.user_ids.0' }],
      });
    },
  );

  it('answer other prototype-like ids as unknown users', async () => {
    const socket = await open(token);
    const reply = await request(socket, 'presence.query', { user_ids: ['constructor', 'prototype'] });
    expect(reply.d).toEqual({ presence: { constructor: 'unknown', prototype: 'unknown' } });
  });
});
