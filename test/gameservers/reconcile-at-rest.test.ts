import { describe, expect, it } from 'vitest';
import { anythingLive } from '../../src/modules/gameservers/gameservers.repository.js';
import { registerUser } from '../helpers/accounts.js';
import { useTestApp } from '../helpers/app.js';
import { createWorld } from '../helpers/worlds.js';
import { gameServerCalls, silentCommand } from './gameservers.js';

const { command } = silentCommand();
const app = useTestApp({ GAMESERVER_COMMAND: command });
const { spawn, settled, expectStatus } = gameServerCalls(app);

/**
 * The reconcile every node runs every 2 s (docs/gameservers.md) first asks whether there is
 * anything to reconcile, and runs its sweeps only then: at rest, one statement instead of five.
 */
describe('the game servers reconcile at rest', () => {
  it('finds nothing to reconcile without a live server, and something while one starts or runs', async () => {
    expect(await anythingLive(app().db.data)).toBe(false);
    const owner = await registerUser(app());
    const { worldId } = await createWorld(app(), owner.access_token);
    const { server_id } = await spawn(owner, worldId);
    expect(await anythingLive(app().db.data)).toBe(true);
    await settled(owner, server_id);
    expect(await anythingLive(app().db.data)).toBe(true);
    await expectStatus(204, 'DELETE', `/api/servers/${server_id}`, owner);
    expect(await anythingLive(app().db.data)).toBe(false);
  });
});
