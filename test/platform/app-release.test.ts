import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect, it } from 'vitest';
import { registerUser } from '../helpers/accounts.js';
import { buildTestApp } from '../helpers/app.js';
import { authedSocket } from '../helpers/ws-client.js';

/**
 * A closed app must leave nothing reachable: the test suite builds many in one process, and a
 * restarted service would otherwise keep the old one. uWS keeps an App's socket handlers for the
 * life of the process (an App cannot be freed), so the gateway must not be reachable from them.
 */
it('leaves nothing of a closed app reachable, though uWS keeps its socket handlers for the life of the process', async () => {
  const collectGarbage = exposedGc();
  const closed = await closedAppServer();
  // A WeakRef holds its target until the job that made it ends, and work the close started (a
  // callback still queued, under a loaded machine) may hold the app a moment longer: collected
  // within the deadline, it was not leaked. A boolean, since printing the app itself throws.
  const collected = () => {
    collectGarbage();
    return closed.deref() === undefined;
  };
  await expect.poll(collected, { timeout: 10_000, interval: 100 }).toBe(true);
});

/** The HTTP server of an app that served a request and a socket, then closed, held weakly. */
async function closedAppServer(): Promise<WeakRef<object>> {
  const app = await buildTestApp();
  const user = await registerUser(app);
  const socket = await authedSocket(app.wsUrl, user.access_token);
  socket.close();
  await socket.closed;
  await app.close();
  return new WeakRef(app.http);
}

/** V8's gc(), which test workers do not expose: the flag turned on, the function read from a new context. */
function exposedGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
