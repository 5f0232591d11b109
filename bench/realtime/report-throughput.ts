import { cores, pct, verdict, whole } from './format.js';
import { type FrameWindow, IN_FLIGHT, LOAD_CONNECTIONS } from './frame-load.js';
import { CLUSTER_BACKENDS, SINGLE_BACKENDS } from './phases.js';
import { REST_CONNECTIONS, type RestWindow } from './rest-load.js';
import {
  type ContenderRounds,
  MIN_WINDOW_SECONDS,
  ROUNDS,
  type RoundSchedule,
  ratio,
  summarize,
  WARMUP_SECONDS,
  WINDOW_GAP_MS,
  type WindowFigures,
} from './rounds.js';
import { median } from './stats.js';
import type { Comparison } from './throughput.js';

/** The report's throughput sections: the method of the interleaved rounds, frames/s and REST req/s. */

const TARGET_WS_RATIO = 0.5;
const TARGET_REST_RATIO = 0.6;

export interface Comparisons {
  single?: Comparison;
  cluster?: Comparison;
}

/** The same figure columns for both loads: median, range and the CPU medians. */
function figureCells(rounds: ContenderRounds<WindowFigures>): string {
  const s = summarize(rounds.windows);
  return `**${whole(s.median)}** | ${whole(s.min)}–${whole(s.max)} | ${cores(s.serverCores)} | ${s.serverUsPerOp.toFixed(1)} | ${cores(s.clientCores)} | ${cores(s.machineCores)}`;
}

function frameRow(roundsOf: string, server: string, backends: string, rounds: ContenderRounds<FrameWindow>) {
  const errors: Record<string, number> = {};
  for (const window of [rounds.warmUp, ...rounds.windows])
    for (const [code, count] of Object.entries(window.errors)) errors[code] = (errors[code] ?? 0) + count;
  const entries = Object.entries(errors);
  const errorsCell =
    entries.length === 0 ? '0' : entries.map(([code, count]) => `${count} x ${code}`).join(', ');
  const connections = Math.min(...rounds.windows.map((w) => w.connections));
  return `| ${roundsOf} | ${server} | ${backends} | ${connections} x ${IN_FLIGHT} | ${figureCells(rounds)} | ${errorsCell} |`;
}

function restRow(roundsOf: string, server: string, backends: string, rounds: ContenderRounds<RestWindow>) {
  const windows = [rounds.warmUp, ...rounds.windows];
  const errors = windows.reduce((sum, w) => sum + w.errors, 0);
  const non2xx = windows.reduce((sum, w) => sum + w.non2xx, 0);
  const errorsCell = errors + non2xx === 0 ? '0' : `${errors} errors, ${non2xx} non-2xx`;
  const latency = (pick: (w: RestWindow) => number) => median(rounds.windows.map(pick));
  return `| ${roundsOf} | ${server} | ${backends} | ${figureCells(rounds)} | ${latency((w) => w.p50Ms)} | ${latency((w) => w.p99Ms)} | ${errorsCell} |`;
}

function ratioText(
  subject: ContenderRounds<WindowFigures>,
  reference: ContenderRounds<WindowFigures>,
): string {
  const r = ratio(subject, reference);
  return `${pct(r.ratio)} (per-round ratios ${pct(r.perRoundMin)}–${pct(r.perRoundMax)})`;
}

function methodSection(seconds: number, schedule: RoundSchedule): string {
  const measured = schedule.rounds * schedule.windowSeconds;
  return `## Throughput method

This machine's speed drifts: the same server measured in two consecutive 10 s windows has differed by
30%, so a ratio of two figures measured minutes apart swung from run to run for the same code.
Each atrium figure is therefore measured in the same rounds as its bare peer. Once an atrium phase's
idle-memory readings are over (never during them), the phase restarts the atrium instance it
measures and starts bench/bare-uws.ts and bench/bare-fastify.ts beside it; a server whose turn it
is not sits idle. The restart is there because the memory readings force full GCs through the
inspector (HeapProfiler.collectGarbage), and a Node server that has already served load answers HTTP
some 10-15% slower for minutes after one: bare Fastify did too, beside a twin that was not collected
(\`npm run bench -- node-flags\` shows both). A minute of quiet, in which V8 runs its own
collections, did not slow bare Fastify so in a run by hand. So every server in the rounds starts as
\`npm start\` would, none collected by force. Frames
first: each server gets one ${WARMUP_SECONDS} s warm-up window, then ${schedule.rounds} rounds of one ${schedule.windowSeconds} s window per server, the
first server of a round alternating so that a drift within a round does not always favour the same
one, with a ${WINDOW_GAP_MS / 1000} s pause before every window; then the REST load the same way. That is ${measured} s measured per
server and load: \`--seconds ${seconds}\` spread over at most ${ROUNDS} windows, each a whole number of seconds and at
least ${MIN_WINDOW_SECONDS} s.

Per server the tables give the median of its ${schedule.rounds} window figures, in bold, and their lowest and highest.
CPU columns are the medians of the windows' figures, in cores in use during the window (1.00 = one
core busy): the server process (from /proc/<pid>/stat), the client (this process) and the whole
machine; server µs/op = the server's CPU time per acknowledged frame or completed request, the
median over the windows. The ratios are median(atrium) / median(bare peer) over the same rounds, with
the lowest and highest of the per-round ratios (a round's atrium window over the peer's) beside
them. Errors are counted over every window, the warm-up included.
`;
}

function framesSection(seconds: number, schedule: RoundSchedule, { single, cluster }: Comparisons): string {
  const rows = [
    single && frameRow('1 instance', 'atrium', SINGLE_BACKENDS, single.frames.atrium),
    single && frameRow('1 instance', 'bare uWS msgpack echo', 'none', single.frames.echo),
    cluster && frameRow('2 instances', 'atrium #1 of 2', CLUSTER_BACKENDS, cluster.frames.atrium),
    cluster && frameRow('2 instances', 'bare uWS msgpack echo', 'none', cluster.frames.echo),
  ];
  const ratios = [
    single &&
      `- 1 instance (in-process KV): atrium acknowledges ${ratioText(single.frames.atrium, single.frames.echo)} of the echo's frames/s; target >= ${pct(TARGET_WS_RATIO)}: ${verdict(ratio(single.frames.atrium, single.frames.echo).ratio >= TARGET_WS_RATIO)}.`,
    cluster &&
      `- 2 instances, with Redis as the KV store: atrium #1 acknowledges ${ratioText(cluster.frames.atrium, cluster.frames.echo)} of the echo's frames/s in its rounds.`,
  ];
  return `## Heartbeat frames/s

${LOAD_CONNECTIONS} authenticated sockets per server in the benchmark process, opened before the rounds and
kept open through them. In a window each socket keeps ${IN_FLIGHT} \`{t: 'presence.heartbeat', id}\` frames
outstanding; a frame counts when its ack arrives within the window, and the frames still outstanding
at its end are drained before the next window. In atrium each frame passes the frame rate limiter,
envelope and payload validation and the auth gate; the handler builds a service context and the
heartbeat refreshes the user's presence key and its TTL in the KV store and records the sighting.
The echo is bench/bare-uws.ts decoding each frame and answering \`{t: 'ack', id}\`, driven by the same
client code. ${schedule.rounds} rounds of ${schedule.windowSeconds} s windows (\`--seconds ${seconds}\`), see "Throughput method".

| rounds | server | backends | sockets x in flight | frames/s, median | min–max | server CPU | server µs/frame | client CPU | machine CPU | error frames |
|---|---|---|---|---|---|---|---|---|---|---|
${rows.filter(Boolean).join('\n')}

${ratios.filter(Boolean).join('\n')}
`;
}

function restSection(seconds: number, schedule: RoundSchedule, { single, cluster }: Comparisons): string {
  const rows = [
    single && restRow('1 instance', 'atrium', SINGLE_BACKENDS, single.rest.atrium),
    single && restRow('1 instance', 'bare Fastify', 'none', single.rest.fastify),
    single && restRow('1 instance', 'bare Fastify, no token sent', 'none', single.rest.fastifyHeaderless),
    cluster && restRow('2 instances', 'atrium #1 of 2', CLUSTER_BACKENDS, cluster.rest.atrium),
    cluster && restRow('2 instances', 'bare Fastify', 'none', cluster.rest.fastify),
    cluster && restRow('2 instances', 'bare Fastify, no token sent', 'none', cluster.rest.fastifyHeaderless),
  ];
  const ratios = [
    single &&
      `- 1 instance (in-process KV): atrium serves ${ratioText(single.rest.atrium, single.rest.fastify)} of the bare Fastify req/s for the same requests; target >= ${pct(TARGET_REST_RATIO)}: ${verdict(ratio(single.rest.atrium, single.rest.fastify).ratio >= TARGET_REST_RATIO)}. ` +
        `Beside bare Fastify sent no token: ${ratioText(single.rest.atrium, single.rest.fastifyHeaderless)}.`,
    cluster &&
      `- 2 instances, with Redis: atrium #1 serves ${ratioText(cluster.rest.atrium, cluster.rest.fastify)} of the bare Fastify req/s for the same requests in its rounds ` +
        `(${ratioText(cluster.rest.atrium, cluster.rest.fastifyHeaderless)} beside bare Fastify sent no token).`,
  ];
  const body = (single ?? cluster)?.restBody;
  return `## REST heartbeat

autocannon in the benchmark process, ${REST_CONNECTIONS} connections, one autocannon run per window; req/s = completed
requests / the run's duration, p50 and p99 are the medians of the windows' latency percentiles.
${schedule.rounds} rounds of ${schedule.windowSeconds} s windows (\`--seconds ${seconds}\`), see "Throughput method". atrium:
\`POST /api/presence/heartbeat\` with one synthetic user's bearer token for every request (the onRequest
hook verifies the token, then the heartbeat sets the KV key and records last-seen; the answer is 200${body ? ` \`${body}\`` : ''}).
With a single token, a verifier that remembers verified tokens checks the RS256 signature once and
then only expiry and revocation.
Bare: Fastify 5 with no logger, hooks or plugins (bench/bare-fastify.ts), \`POST /heartbeat\` answering
a JSON object of the same shape. It is sent the very requests atrium is sent, the same
\`Authorization: Bearer\` header included, which it ignores: the target compares the servers, and the
token makes each request some 700 bytes longer for both to read and parse, so the figure the target
is about is beside that run. The bare route is also measured without the header, in the same rounds,
to show what the token's bytes alone cost.

| rounds | server | backends | req/s, median | min–max | server CPU | server µs/req | client CPU | machine CPU | p50 ms | p99 ms | errors + non-2xx |
|---|---|---|---|---|---|---|---|---|---|---|---|
${rows.filter(Boolean).join('\n')}

${ratios.filter(Boolean).join('\n')}
`;
}

export function throughputSections(
  seconds: number,
  schedule: RoundSchedule,
  comparisons: Comparisons,
): string {
  if (!comparisons.single && !comparisons.cluster)
    return '## Throughput\n\nNot measured: no atrium phase (single, cluster) ran.\n';
  return [
    methodSection(seconds, schedule),
    framesSection(seconds, schedule, comparisons),
    restSection(seconds, schedule, comparisons),
  ].join('\n');
}
