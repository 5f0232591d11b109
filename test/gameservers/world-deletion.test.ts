import { describe, expect, it } from 'vitest';
import { CloseCode } from '../../protocol/frames.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { request, TestSocket } from '../helpers/ws-client.js';
import { gameServerCalls, launchesOf, silentCommand } from './gameservers.js';

describe("a deleted world's game servers", () => {
  const { command, dir } = silentCommand();
  const app = useTestApp({ GAMESERVER_COMMAND: command });
  const { spawn, settled, internal, expectStatus } = gameServerCalls(app);

  it('lose their sockets with 4403 once told the stream ended, and their token answers 401', async () => {
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    await settled(owner, (await spawn(owner, worldId)).server_id);
    const token = launchesOf(dir, worldId)[0]?.['server-token'] as string;
    const socket = await TestSocket.connect(app().wsUrl);
    try {
      expect(await request(socket, 'auth', { token })).toMatchObject({ t: 'ack' });
      expect(await request(socket, 'chunks.subscribe', { world_id: worldId })).toMatchObject({ t: 'ack' });
      await expectStatus(204, 'DELETE', `/api/worlds/${worldId}`, owner);
      await socket.next((f) => f.t === 'chunks.stream_ended');
      expect((await socket.closed).code).toBe(CloseCode.SESSION_ENDED);
      expect((await internal(token, `/internal/worlds/${worldId}`)).statusCode).toBe(401);
    } finally {
      socket.close();
    }
  });
});
