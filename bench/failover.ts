import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { configFrom } from '../src/config.js';
import { registerUser } from '../test/helpers/accounts.js';
import { RedisSentinelServers } from '../test/helpers/redis-topologies.js';
import { authedSocket } from '../test/helpers/ws-client.js';
import { machineLine } from './backends.js';

/**
 * The Redis primary killed (SIGKILL) behind three Sentinels while one sender posts a direct message
 * every 20 ms to a user whose socket is open: how long requests answer 503, and how long until
 * events reach the socket again. One embedded-database node, a private primary + replica.
 */
export async function run(): Promise<string> {
  const servers = await RedisSentinelServers.start();
  const dataDir = await mkdtemp(join(tmpdir(), 'atrium-bench-failover-'));
  const app = await buildApp(
    configFrom({ ...servers.settings, DATA_DIR: dataDir, HTTP_PORT: 0, WS_PORT: 0, LOG_LEVEL: 'silent' }),
  );
  const { wsPort } = await app.listen();
  const [alice, bob] = [await registerUser(app), await registerUser(app)];
  const socket = await authedSocket(`ws://127.0.0.1:${wsPort}/ws`, bob.access_token);
  const refused: number[] = [];
  const killedAt = performance.now();
  await servers.primary.stop();
  const promoted = servers.promoted();
  let flowing: number | undefined;
  while (flowing === undefined) {
    const sent = await app.http.inject({
      method: 'POST',
      url: `/api/chat/dm/${bob.user.id}/messages`,
      headers: { authorization: `Bearer ${alice.access_token}` },
      payload: { body: 'x' },
    });
    if (sent.statusCode === 503) refused.push(performance.now());
    else if (sent.statusCode === 201) {
      const id = sent.json().id;
      flowing = await socket
        .next((f) => f.t === 'dm.message' && (f.d as { id: string }).id === id, 1_000)
        .then(
          () => performance.now(),
          () => undefined,
        );
    } else throw new Error(`unexpected ${sent.statusCode}: ${sent.body}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await promoted;
  const seconds = (ms: number) => (ms / 1000).toFixed(1);
  const last503 = refused.at(-1);
  const report = [
    '# Redis primary failover (Sentinel)',
    '',
    `Command: \`npm run bench -- failover\`. ${machineLine()}`,
    'Setup: one node, embedded database, a private primary + replica + 3 Sentinels (quorum 2, down-after-milliseconds 1000); the primary is killed with SIGKILL while a DM is posted every 20 ms to a user with an open socket.',
    '',
    '| What | Seconds after the kill |',
    '|---|---|',
    `| Requests answered 503 | ${refused.length > 0 ? `${seconds((refused[0] as number) - killedAt)} to ${seconds((last503 as number) - killedAt)} (${refused.length} refusals)` : 'none'} |`,
    `| First DM delivered to the open socket again | ${seconds((flowing as number) - killedAt)} |`,
    '',
  ].join('\n');
  socket.close();
  await app.close();
  await servers.stop();
  await rm(dataDir, { recursive: true, force: true });
  await writeFile(new URL('./results/failover.md', import.meta.url), report);
  console.log(report);
  return report;
}
