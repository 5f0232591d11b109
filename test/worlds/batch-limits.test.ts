import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bearer, registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { queryRows } from '../helpers/database.js';
import { createWorld } from '../helpers/worlds.js';

const MiB = 1024 * 1024;

describe('the msgpack batch body limit (32 MiB)', () => {
  const app = useTestApp();

  async function post(body: Buffer | Readable, headers: Record<string, string> = {}) {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const response = await app().http.inject({
      method: 'POST',
      url: `/api/worlds/${worldId}/chunks/batch`,
      headers: { ...bearer(owner.access_token), 'content-type': 'application/msgpack', ...headers },
      payload: body,
    });
    const [revisions] = await queryRows<{ n: number }>(
      app().db,
      'select count(*)::int as n from chunk_revisions where world_id = ?',
      [worldId],
    );
    return { response, written: revisions?.n };
  }

  it('refuses a body announcing more than 32 MiB with 413 PAYLOAD_TOO_LARGE, writing nothing', async () => {
    const { response, written } = await post(Buffer.alloc(40 * MiB));
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(written).toBe(0);
  });

  it('refuses a body over 32 MiB sent without Content-Length once it is read, writing nothing', async () => {
    const body = Readable.from(Array.from({ length: 33 }, () => Buffer.alloc(MiB)));
    const { response, written } = await post(body as Readable, { 'transfer-encoding': 'chunked' });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(written).toBe(0);
  });
});
