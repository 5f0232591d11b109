import { describe, expect, it } from 'vitest';
import { queryRows } from '../helpers/database.js';
import { useServices } from '../helpers/services.js';

const STATUS_MESSAGE_MAX = 140;

describe('status message rules', () => {
  const services = useServices();

  // Status messages reach the database coalesced; the stored value is read after a flush.
  const storedStatus = async (userId: string) => {
    await services().apis.presence.flushStatusMessages();
    return (
      await queryRows<{ status_message: string | null }>(
        services().db,
        'select status_message from users where id = ?',
        [userId],
      )
    )[0]?.status_message;
  };

  it('stores the message without its surrounding whitespace', async () => {
    const { call, ctxFor, createUser } = services();
    const { user } = await createUser();
    const answer = await call('presence.status', ctxFor(user), { status_message: '  \tin a meeting \n' });
    expect(answer).toEqual({ status_message: 'in a meeting' });
    expect(await storedStatus(user.id)).toBe('in a meeting');
  });

  it('clears the message when only whitespace is sent', async () => {
    const { call, ctxFor, createUser } = services();
    const { user } = await createUser();
    await call('presence.status', ctxFor(user), { status_message: 'away' });
    expect(await call('presence.status', ctxFor(user), { status_message: '   ' })).toEqual({
      status_message: null,
    });
    expect(await storedStatus(user.id)).toBeNull();
  });

  it('accepts a message of exactly the cap once trimmed, however much whitespace surrounds it', async () => {
    const { call, ctxFor, createUser } = services();
    const { user } = await createUser();
    const message = 'x'.repeat(STATUS_MESSAGE_MAX);
    await call('presence.status', ctxFor(user), { status_message: `${' '.repeat(200)}${message}  ` });
    expect(await storedStatus(user.id)).toBe(message);
  });

  it('refuses a message over the cap after trimming with VALIDATION_FAILED and keeps the stored one', async () => {
    const { call, ctxFor, createUser } = services();
    const { user } = await createUser();
    await call('presence.status', ctxFor(user), { status_message: 'kept' });
    await expect(
      call('presence.status', ctxFor(user), { status_message: ` ${'x'.repeat(STATUS_MESSAGE_MAX + 1)} ` }),
    ).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
      extra: { errors: [{ path: 'status_message' }] },
    });
    expect(await storedStatus(user.id)).toBe('kept');
  });

  it('refuses an anonymous caller with UNAUTHENTICATED', async () => {
    const { call, ctxFor } = services();
    await expect(call('presence.status', ctxFor(null), { status_message: 'hi' })).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });
});
