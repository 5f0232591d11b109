import { cores, whole } from '../realtime/format.js';
import type { ContenderRounds, RoundSchedule } from '../realtime/rounds.js';
import { median } from '../realtime/stats.js';
import type { PeerWindow } from './load-client.js';
import { GROUP_CHAT, type Row } from './rows.js';

export interface RowResult {
  row: Row;
  /** One per side, in the sides' order (Atrium one process, Atrium all cores, Nakama). */
  rounds: ContenderRounds<PeerWindow>[];
  answerBytes: (number | undefined)[];
}

export interface ConnectRound {
  window: PeerWindow;
  baseKiB: number;
  heldKiB: number;
  /** False when an RSS reading hit its wait's cap before it stopped moving. */
  steady: boolean;
}

export interface SideInfo {
  name: string;
  restKiB: number;
}

export interface PeersRun {
  command: string;
  environment: string;
  versions: string;
  code: string;
  minutes: number;
  schedule: RoundSchedule;
  sockets: number;
  connectInFlight: number;
  sides: SideInfo[];
  rows: RowResult[];
  connect: ConnectRound[][];
}

/** A figure of the rounds: the median, and the lowest and highest round when there are several. */
/** A side's windows as the table's cells: rate, p50, p99 and CPU per operation, each median (spread). */
function windowCells(windows: readonly PeerWindow[]): [string, string, string, string] {
  return [
    spread(
      windows.map((v) => v.perSecond),
      whole,
    ),
    spread(
      windows.map((v) => v.p50Ms),
      ms,
    ),
    spread(
      windows.map((v) => v.p99Ms),
      ms,
    ),
    spread(
      windows.map((v) => v.cpuUsPerOp),
      whole,
    ),
  ];
}

function spread(values: number[], format: (v: number) => string): string {
  const m = format(median(values));
  return values.length > 1 ? `${m} (${format(Math.min(...values))}–${format(Math.max(...values))})` : m;
}

const ms = (v: number) => v.toFixed(1);
const x = (v: number) => `${v.toFixed(2)}x`;
const mib = (kib: number) => (kib / 1024).toFixed(1);

function errorsOf(windows: PeerWindow[]): string {
  const total: Record<string, number> = {};
  for (const w of windows)
    for (const [code, n] of Object.entries(w.errors)) total[code] = (total[code] ?? 0) + n;
  return (
    Object.entries(total)
      .map(([code, n]) => `${code} ×${n}`)
      .join(', ') || '—'
  );
}

/** Atrium's median over Nakama's (the last side). */
function ratios(rounds: ContenderRounds<PeerWindow>[], index: number): string[] {
  const of = (i: number, pick: (w: PeerWindow) => number) =>
    median((rounds[i] as ContenderRounds<PeerWindow>).windows.map(pick));
  const nakama = rounds.length - 1;
  return [(w: PeerWindow) => w.perSecond, (w: PeerWindow) => w.cpuUsPerOp, (w: PeerWindow) => w.p99Ms].map(
    (pick) => x(of(index, pick) / of(nakama, pick)),
  );
}

export function peersReport(run: PeersRun): string {
  const [one, all, nakama] = run.sides.map((s) => s.name);
  const summary = run.rows.map(
    ({ row, rounds }) => `| ${row.name} | ${[...ratios(rounds, 0), ...ratios(rounds, 1)].join(' | ')} |`,
  );
  const connectRatio = (index: number) => {
    const rate = (i: number) => median((run.connect[i] ?? []).map((r) => r.window.perSecond));
    const perSocket = (i: number) => median((run.connect[i] ?? []).map(perSocketKiB));
    const last = run.sides.length - 1;
    return { rate: x(rate(index) / rate(last)), memory: x(perSocket(index) / perSocket(last)) };
  };
  const rest = (i: number) => (run.sides[i] as SideInfo).restKiB;
  const details = run.rows.flatMap(({ row, rounds, answerBytes }) =>
    rounds.map((side, i) => {
      const w = side.windows;
      const [rate, p50, p99, cpu] = windowCells(w);
      return `| ${i === 0 ? row.name : ''} | ${side.name} | **${rate}** | ${p50} | ${p99} | **${cpu}** | ${cores(median(w.map((v) => v.serverCores)))} | ${cores(median(w.map((v) => v.databaseCores)))} | ${cores(
        median(w.map((v) => v.clientCores)),
      )} | ${cores(median(w.map((v) => v.machineCores)))} | ${answerBytes[i] ?? ''} | ${errorsOf([side.warmUp, ...w])} |`;
    }),
  );
  const connectRows = run.connect.map((rounds, i) => {
    const w = rounds.map((r) => r.window);
    const [rate, p50, p99, cpu] = windowCells(w);
    return `| ${run.sides[i]?.name} | **${rate}** | ${p50} | ${p99} | ${cpu} | **${spread(rounds.map(perSocketKiB), (v) => v.toFixed(1))}** | ${mib(rest(i))} | ${errorsOf(w)} |`;
  });
  return `# Atrium beside Nakama

\`${run.command}\` — ${run.environment} ${run.versions}. ${run.code} ${run.minutes.toFixed(1)} minutes.

Every server runs at once on this machine's PostgreSQL (each on its own database) and takes turns:
a 2 s warm-up window each, then ${run.schedule.rounds} interleaved rounds of ${run.schedule.windowSeconds} s windows; each figure
is the median of the rounds with the lowest and highest round in brackets. Each server has a
load process of its own (bench/peers/load.ts, the same code for both: \`ws\` with msgpack frames
for Atrium, Nakama's JSON envelopes; autocannon for REST), on the same cores as the servers.
CPU per operation counts the server's process (and its workers), the PostgreSQL backends
of its database and, for Atrium, Redis. Nakama runs with its defaults but a session of a day and
1,024 messages waiting per socket before it closes one as too slow (its default 64 closed sockets
of the status update's load; Atrium's limit is 1 MiB). Each load process encodes a frame once and
puts the request's id in per send, and reads an answer's id (and an event's type) off its first
bytes, parsing only errors and the setup frames' answers.

## Atrium / Nakama

Throughput above 1x and CPU per operation and p99 below 1x are Atrium ahead.

| Work | ${one}: throughput | CPU per op | p99 | ${all}: throughput | CPU per op | p99 |
|---|---|---|---|---|---|---|
${summary.join('\n')}
| Connect and authenticate ${whole(run.sockets)} sockets, ${run.connectInFlight} in flight | ${connectRatio(0).rate} | | | ${connectRatio(1).rate} | | |
| Memory per idle authenticated socket | ${connectRatio(0).memory} | | | ${connectRatio(1).memory} | | |
| Process memory at rest | ${x(rest(0) / rest(2))} | | | ${x(rest(1) / rest(2))} | | |

## Each server

| Work | Server | per second | p50 ms | p99 ms | CPU µs per op | server cores | database cores | load process cores | machine cores | answer bytes | errors |
|---|---|---|---|---|---|---|---|---|---|---|---|
${details.join('\n')}

Connect and authenticate ${whole(run.sockets)} sockets, ${run.connectInFlight} in flight (Atrium: open, then an \`auth\` frame until its
ack; Nakama: open with the session token in the URL, which it checks before the upgrade); then
the RSS (process and workers) with the sockets held, less the RSS before, each read once it
stopped moving (20 s within 2 MiB or 1%, at most 90 s; rounds where it did not: ${
    run.connect.flat().filter((r) => !r.steady).length
  }):

| Server | sockets/s | p50 ms | p99 ms | CPU µs per socket | KiB per idle socket | MiB at rest | errors |
|---|---|---|---|---|---|---|---|
${connectRows.join('\n')}

## What each side does that the other does not

${notes(run, nakama ?? 'Nakama')}
`;
}

function perSocketKiB(round: ConnectRound): number {
  return (round.heldKiB - round.baseKiB) / round.window.ops;
}

function notes(run: PeersRun, nakama: string): string {
  const rowNotes = run.rows
    .filter(({ row }) => row.nakama)
    .map(({ row }) => `- **${row.name}**: ${nakama} runs ${row.nakama}.`);
  return [
    ...rowNotes,
    `- **Group chat**: ${GROUP_CHAT.senders} of the 50 members send, ${GROUP_CHAT.inFlight} messages in flight each; every message reaches all 50 members' sockets on both sides.`,
    "- **Direct messages**: Atrium runs each message through its text filter and per-sender rate limit (lifted to 100,000 per window, still counted in Redis), checks blocks, the friendship and the peer's DM policy in the statement that stores it, and appends the event to both users' recorded streams (the replay after a reconnect); Nakama stores the message and hands it to the channel's joined sockets.",
    "- **Purchase**: Atrium checks the listing, its price and the buyer's ownership, splits the fee to the platform's revenue account, holds the seller's share in creator_pending, records the purchase and its Idempotency-Key, and adds to the inventory's quantity; the Nakama module trusts its payload, writes both wallets with ledger rows and overwrites the inventory object.",
    "- **Status update**: Atrium keeps the status in Redis and writes each user's latest to PostgreSQL in batches; Nakama keeps it in memory and sends a presence event to the status's followers, the sender included.",
    '- **Answers**: the "answer bytes" column is one answer of each REST row as the check request before the rounds got it; Nakama\'s answers carry more (its user objects, metadata and edge counts).',
    "- **Sessions**: Atrium's sockets present access tokens the bench signed with the service's key for synthetic users (the gateway checks the signature, claims and revocation mark); Nakama's present session tokens of device accounts it created, which it checks against its in-memory session cache.",
    `- **Idle memory**: RSS growth over the held sockets, without a forced garbage collection on either side.`,
  ].join('\n');
}
