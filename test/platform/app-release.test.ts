import { expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { buildTestApp } from '../helpers/app.js';
import { exposedGc } from '../helpers/gc.js';
import { authedSocket } from '../helpers/ws-client.js';

/**
 * A closed app must leave nothing reachable: the test suite builds many in one process, and a
 * restarted service would otherwise keep the old one. uWS keeps an App's socket handlers for the
 * life of the process (an App cannot be freed), so the gateway must not be reachable from them.
 */
it('leaves nothing of a closed app reachable, though uWS keeps its socket handlers for the life of the process', async () => {
  const collectGarbage = exposedGc();
  const closed = await closedAppServer();
  // Work the close started (a callback still queued, under a loaded machine) may hold the app a
  // moment longer: collected within the deadline, it was not leaked.
  await expect
    .poll(
      () => {
        collectGarbage();
        return closed.collected;
      },
      { timeout: 10_000, interval: 100 },
    )
    .toBe(true);
});

/**
 * The HTTP server of an app that served a request and a socket, then closed, watched by a
 * FinalizationRegistry rather than a WeakRef: each deref() of a WeakRef keeps its target alive
 * until the job ends, which on some machines kept it through every poll.
 */
async function closedAppServer(): Promise<{ collected: boolean; registry: FinalizationRegistry<string> }> {
  const app = await buildTestApp();
  const user = await registerUser(app);
  const socket = await authedSocket(app.wsUrl, user.access_token);
  socket.close();
  await socket.closed;
  await app.close();
  // The registry is kept with the flag: a registry collected first calls back nothing.
  const watch = {
    collected: false,
    registry: new FinalizationRegistry(() => {
      watch.collected = true;
    }),
  };
  watch.registry.register(app.http, 'http');
  return watch;
}
