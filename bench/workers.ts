import { mkdir, writeFile } from 'node:fs/promises';
import { machineLine } from './backends.js';
import { seedUsers } from './datapath/seed.js';
import { codeLine, codeState } from './realtime/code-state.js';
import { cores, pct, whole } from './realtime/format.js';
import { type FrameClients, frameClients, IN_FLIGHT, LOAD_CONNECTIONS } from './realtime/frame-load.js';
import { withSharedBackends } from './realtime/phases.js';
import { progress } from './realtime/progress.js';
import { REST_CONNECTIONS, restContender } from './realtime/rest-load.js';
import {
  type ContenderRounds,
  interleavedRounds,
  ratio,
  roundSchedule,
  summarize,
  type WindowFigures,
} from './realtime/rounds.js';
import { type Atrium, startAtrium, stopAtrium } from './realtime/servers.js';
import { tokenIssuer } from './realtime/tokens.js';

/**
 * Worker mode on this host: one service with WORKERS=2 beside one with WORKERS=1, both up on the
 * same Postgres and Redis and taking turns in interleaved rounds, for GET /api/users/me and
 * presence.heartbeat frames. The load client shares the host's cores, so its CPU is reported
 * beside the services'. Usage: npm run bench -- workers [--seconds N]. Writes bench/results/workers.md.
 */
export async function run(seconds: number): Promise<string> {
  const schedule = roundSchedule(seconds);
  const started = performance.now();
  const before = codeState();
  const environment = machineLine();
  progress(environment);
  const [me, heartbeats] = await withSharedBackends('workers', async (env, dataDir) => {
    const userIds = await seedUsers(env, LOAD_CONNECTIONS);
    const services: Atrium[] = [];
    const clients: FrameClients[] = [];
    try {
      for (const workers of ['1', '2']) services.push(await startAtrium({ ...env, WORKERS: workers }));
      const issuer = await tokenIssuer(dataDir);
      const tokens = await issuer.issueFor(userIds);
      await issuer.close();
      const names = services.map((_, i) => `WORKERS=${i + 1}`);
      progress('GET /api/users/me...');
      const me = await interleavedRounds(
        'GET me',
        services.map((service, i) =>
          restContender(
            names[i] as string,
            `http://127.0.0.1:${service.httpPort}/api/users/me`,
            service.pid,
            {},
            {
              method: 'GET',
              setup: (request) => ({
                ...request,
                headers: {
                  ...request.headers,
                  authorization: `Bearer ${tokens[Math.floor(Math.random() * tokens.length)]}`,
                },
              }),
            },
          ),
        ),
        schedule,
      );
      progress('presence.heartbeat frames...');
      for (const [i, service] of services.entries())
        clients.push(
          await frameClients(names[i] as string, `ws://127.0.0.1:${service.wsPort}/ws`, tokens, service.pid),
        );
      return [me, await interleavedRounds('heartbeats', clients, schedule)] as const;
    } finally {
      await Promise.all(clients.map((client) => client.close()));
      for (const service of services) await stopAtrium(service);
    }
  });
  const report = `# Worker mode benchmark

\`npm run bench -- ${process.argv.slice(2).join(' ')}\` — ${environment} ${codeLine(before, codeState())} ${((performance.now() - started) / 60_000).toFixed(1)} minutes.
Postgres and Redis of this machine; each process's pool is DATABASE_POOL_SIZE's default of 10 connections. ${schedule.rounds} interleaved rounds of ${schedule.windowSeconds} s windows after a 2 s warm-up each.

Both services run at once and take turns, so the ratio compares windows of the same minutes. The
load client (autocannon, ${REST_CONNECTIONS} connections; ${LOAD_CONNECTIONS} sockets with ${IN_FLIGHT} heartbeats in flight each) runs in
the benchmark's process on the same cores: its CPU is the "client" column, the services' (primary
and workers) the "service" column, everything busy on the machine the "machine" column.

| Load | Service | per second, median (range) | service cores | client cores | machine cores | WORKERS=2 / WORKERS=1 |
|---|---|---|---|---|---|---|
${row('GET /api/users/me', me)}
${row('presence.heartbeat frames', heartbeats)}
`;
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/workers.md', report);
  console.log(report);
  return report;
}

function row(load: string, [one, two]: readonly ContenderRounds<WindowFigures>[]): string {
  const r = ratio(two as ContenderRounds<WindowFigures>, one as ContenderRounds<WindowFigures>);
  return [one, two]
    .map((rounds, i) => {
      const s = summarize((rounds as ContenderRounds<WindowFigures>).windows);
      const last = i === 1 ? `**${pct(r.ratio)}** (rounds ${pct(r.perRoundMin)}–${pct(r.perRoundMax)})` : '';
      return `| ${i === 0 ? load : ''} | ${rounds?.name} | **${whole(s.median)}** (${whole(s.min)}–${whole(s.max)}) | ${cores(s.serverCores)} | ${cores(s.clientCores)} | ${cores(s.machineCores)} | ${last} |`;
    })
    .join('\n');
}
