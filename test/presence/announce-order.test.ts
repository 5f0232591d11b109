import { afterAll, describe, expect, it } from 'vitest';
import { presenceKey } from '../../src/modules/presence/presence.service.js';
import { transaction } from '../../src/platform/data-access.js';
import { executeBound } from '../../src/platform/db.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { openedSockets, request } from '../helpers/ws-client.js';

/**
 * A presence announcement reads the database before it goes out, and another node may change the
 * status meanwhile: a survivor ending a dead node's user announces offline while the user's new
 * node restores them online. The event must tell the status as it is when it goes out, or the
 * late offline has the last word and subscribers show an online user offline for good.
 */
describe('the status a presence event tells', () => {
  const app = useTestApp();
  const { open, closeAll } = openedSockets(() => app().wsUrl);

  afterAll(() => closeAll());

  it('is the status the user has when the event goes out, not the one that started the announcement', async () => {
    const watcher = await registerUser(app());
    const subject = await registerUser(app());
    const watching = await open(watcher.access_token);
    const subjectSocket = await open(subject.access_token);
    const ack = await request(watching, 'presence.subscribe', { user_ids: [subject.user.id] });
    expect(ack.d).toMatchObject({ presence: { [subject.user.id]: 'online' } });

    // The profiles table locked: the announcement's audience read waits until the lock goes.
    let release: () => void = () => undefined;
    let locked: () => void = () => undefined;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const holding = transaction(app().db.data, async (tx) => {
      await executeBound(tx, 'lock table profiles in access exclusive mode', []);
      locked();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await isLocked;

    subjectSocket.close();
    await subjectSocket.closed;
    await expect.poll(() => app().kv.get(presenceKey(subject.user.id)), { timeout: 10_000 }).toBeNull();
    // The user is back, as the node restoring them would record it, before the offline goes out.
    await app().kv.set(presenceKey(subject.user.id), String(Date.now()), { ttlMs: 60_000 });
    release();
    await holding;

    const event = await watching.next(
      (frame) => frame.t === 'presence' && (frame.d as { user_id?: string }).user_id === subject.user.id,
      10_000,
    );
    expect(event.d).toMatchObject({ user_id: subject.user.id, status: 'online' });
  });
});
