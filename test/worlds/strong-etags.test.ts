import { describe, expect, it } from 'vitest';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';

describe('If-Match compares strongly (RFC 9110)', () => {
  const app = useTestApp();

  async function chunkAtRevision() {
    const owner = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    const url = `/api/worlds/${worldId}/rooms/${mainRoomId}/chunks/0/0/0`;
    const write = (method: 'PUT' | 'DELETE', headers: Record<string, string>) =>
      app().http.inject({
        method,
        url,
        headers: { ...bearer(owner.access_token), 'content-type': 'application/octet-stream', ...headers },
        ...(method === 'PUT' ? { payload: chunkBytes('a') } : {}),
      });
    const created = await write('PUT', { 'if-none-match': '*' });
    expect(created.statusCode).toBe(200);
    const revisions = async () =>
      (
        await queryRows<{ n: number }>(
          app().db,
          'select count(*)::int as n from chunk_revisions where world_id = ?',
          [worldId],
        )
      )[0]?.n;
    return { revision: created.json().revision as number, write, revisions };
  }

  it.each(['PUT', 'DELETE'] as const)(
    'refuses a %s whose If-Match is the weak tag of the current revision with 409, writing nothing',
    async (method) => {
      const { revision, write, revisions } = await chunkAtRevision();
      const response = await write(method, { 'if-match': `W/"${revision}"` });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({ code: 'REVISION_CONFLICT', current_revision: revision });
      expect(await revisions()).toBe(1);
    },
  );

  it('accepts the strong tag of the same revision', async () => {
    const { revision, write, revisions } = await chunkAtRevision();
    expect((await write('PUT', { 'if-match': `"${revision}"` })).statusCode).toBe(200);
    expect(await revisions()).toBe(2);
  });
});
