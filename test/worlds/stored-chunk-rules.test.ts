import { describe, expect, it } from 'vitest';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { chunkBytes, createWorld } from '../helpers/worlds.js';

describe('a chunk stored before a codec rule tightened', () => {
  const app = useTestApp();

  it('answers its JSON view 422 INVALID_CHUNK with the offset, never 500, and stays readable as bytes', async () => {
    const owner = await registerUser(app());
    const { worldId, mainRoomId } = await createWorld(app(), owner.access_token);
    const url = `/api/worlds/${worldId}/rooms/${mainRoomId}/chunks/0/0/0`;
    const put = await app().http.inject({
      method: 'PUT',
      url,
      headers: {
        ...bearer(owner.access_token),
        'content-type': 'application/octet-stream',
        'if-none-match': '*',
      },
      payload: chunkBytes('legacy'),
    });
    expect(put.statusCode).toBe(200);
    // As an older release stored it: an object id holding U+0000, which the codec now refuses.
    const legacy = chunkBytes('legacy');
    const at = legacy.indexOf(Buffer.from('legacy'));
    legacy[at] = 0;
    await queryRows(
      app().db,
      `with next as (select nextval('chunk_revision_ids') as id),
       appended as (
         insert into chunk_revisions (id, chunk_id, world_id, room_id, x, y, z, payload, tombstone)
         select next.id, c.id, c.world_id, c.room_id, c.x, c.y, c.z, ?, false from chunks c, next where c.room_id = ?
       )
       update chunks set revision = (select id from next) where room_id = ?`,
      [legacy, mainRoomId, mainRoomId],
    );
    const json = await app().http.inject({
      method: 'GET',
      url: `${url}?format=json`,
      headers: bearer(owner.access_token),
    });
    expect(json.statusCode, json.body).toBe(422);
    expect(json.json()).toMatchObject({ code: 'INVALID_CHUNK', offset: at });
    const raw = await app().http.inject({ method: 'GET', url, headers: bearer(owner.access_token) });
    expect(raw.statusCode).toBe(200);
    expect(raw.rawPayload.equals(legacy)).toBe(true);
  });
});
