import { describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import { registerUser, registerWithRole } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { moderationCalls } from './moderation.js';

describe('the report queue', () => {
  // An app of its own: the first test names every report in the queue.
  const app = useTestApp();
  const { reported, queue, directMessage, worldMessage, expectStatus } = moderationCalls(app);
  const user = () => registerUser(app());

  /** Every report of the queue in `state`, read page by page (pages of `limit`). */
  const wholeQueue = async (as: TokenResponse, state: string, limit: number) => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?state=${state}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await expectStatus(200, 'GET', `/api/moderation/reports${query}`, as)).json();
      expect(page.items.length).toBeLessThanOrEqual(limit);
      ids.push(...page.items.map((item: { id: string }) => item.id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    return ids;
  };

  it('lists the open reports newest first by default, each with the reported message as it stands now', async () => {
    const [sender, reporter, owner] = [await user(), await user(), await user()];
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token, { visibility: 'public' });
    const direct = await directMessage(sender, reporter, 'direct');
    const inRoom = await worldMessage(sender, worldId, mainRoomId, 'in the room');
    const first = await reported(reporter, direct, { reason: 'first', details: 'why' });
    const second = await reported(reporter, inRoom, { reason: 'second' });
    const undecided = { reporter_id: reporter.user.id, moderator_id: null, note: null, resolved_at: null };

    const admin = await registerWithRole(app(), 'admin');
    expect((await expectStatus(200, 'GET', '/api/moderation/reports', admin)).json()).toEqual({
      items: [
        {
          ...second,
          ...undecided,
          message: {
            id: inRoom,
            sender_id: sender.user.id,
            body: 'in the room',
            created_at: expect.any(String),
            conversation_id: null,
            world_id: worldId,
            room_id: mainRoomId,
            group_id: null,
            party_id: null,
          },
        },
        {
          ...first,
          ...undecided,
          message: {
            id: direct,
            sender_id: sender.user.id,
            body: 'direct',
            created_at: expect.any(String),
            conversation_id: expect.any(String),
            world_id: null,
            room_id: null,
            group_id: null,
            party_id: null,
          },
        },
      ],
      next_cursor: null,
    });
    const resolved = await queue(await registerWithRole(app(), 'moderator'), '?state=resolved');
    expect(resolved.json()).toEqual({ items: [], next_cursor: null });
  });

  it('pages a state by cursor without gaps or duplicates, and a decision moves a report to its new state', async () => {
    const mod = await registerWithRole(app(), 'moderator');
    const reporter = await user();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      const messageId = await directMessage(await user(), reporter, `m${i}`);
      made.push((await reported(reporter, messageId, { reason: `r${i}` })).id);
    }
    const open: string[] = (await queue(mod, '?limit=100'))
      .json()
      .items.map((item: { id: string }) => item.id);
    expect(open.slice(0, 5)).toEqual([...made].reverse());
    expect(await wholeQueue(mod, 'open', 2)).toEqual(open);

    const [dismissed, resolved] = [made[1] as string, made[3] as string];
    await expectStatus(200, 'PATCH', `/api/moderation/reports/${dismissed}`, mod, { state: 'dismissed' });
    await expectStatus(200, 'PATCH', `/api/moderation/reports/${resolved}`, mod, { state: 'resolved' });
    expect(await wholeQueue(mod, 'open', 2)).toEqual(
      open.filter((id) => id !== dismissed && id !== resolved),
    );
    expect(await wholeQueue(mod, 'dismissed', 2)).toEqual([dismissed]);
    expect(await wholeQueue(mod, 'resolved', 2)).toEqual([resolved]);
  });

  it.each([
    ['a state outside the enum', '?state=closed', 'querystring.state'],
    ['a cursor the list never gave out', '?cursor=bm90LWEta2V5', 'cursor'],
    ['a limit over 100', '?limit=101', 'querystring.limit'],
  ])('refuses %s with 422 VALIDATION_FAILED', async (_case, query, path) => {
    const response = await queue(await registerWithRole(app(), 'moderator'), query);
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      errors: [expect.objectContaining({ path })],
    });
  });
});
