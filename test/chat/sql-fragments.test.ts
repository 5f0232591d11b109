import { describe, expect, it } from 'vitest';
import { messageSql } from '../../src/modules/chat/index.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { useServices } from '../helpers/services.js';

/** The SQL fragment the chat module exports for other modules' statements (moderation's reports). */
describe("the chat module's SQL fragment", () => {
  const services = useServices();

  const messageRows = async (messageId: string) => {
    const { ctxFor } = services();
    return executeBound<Record<string, unknown>>(
      ctxFor(null).data,
      `select m.* from (select $1::uuid as id) r left join lateral ${messageSql('r.id')} m on true`,
      [messageId],
    );
  };

  it('messageSql gives the message as it stands, and one row of nulls for an id of no message', async () => {
    const { call, ctxFor, createUser } = services();
    const [alice, bob] = [await createUser(), await createUser()];
    const sent = await call('dm.send', ctxFor(alice.user), { user_id: bob.user.id, body: 'hello there' });
    expect(await messageRows(sent.id)).toEqual([
      {
        sender_id: alice.user.id,
        body: 'hello there',
        created_at: new Date(sent.created_at),
        conversation_id: sent.conversation_id,
        world_id: null,
        room_id: null,
        group_id: null,
        party_id: null,
      },
    ]);
    const [none] = await messageRows(newId());
    expect(Object.values(none ?? {}).every((value) => value === null)).toBe(true);
  });
});
