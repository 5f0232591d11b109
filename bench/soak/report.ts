import type { Fault } from './chaos.js';
import type { Ledger } from './ledger.js';
import type { SoakOptions } from './options.js';
import type { Disagreement, PresenceCheck } from './presence.js';
import {
  type checkDelivery,
  type checkStored,
  type DeliveryCheck,
  RECOVERY_GRACE_MS,
  type ServerErrorCheck,
  type StoredCheck,
} from './reconcile.js';

export interface SoakResults {
  options: SoakOptions;
  command: string;
  environment: string;
  code: string;
  /** Sockets authenticated before the load started. */
  connected: number;
  /** Sockets authenticated once the load had stopped and the users had time to reconnect. */
  connectedAtEnd: number;
  faults: Fault[];
  ledger: Ledger;
  stored: Awaited<ReturnType<typeof checkStored>>;
  delivery: ReturnType<typeof checkDelivery>;
  presence: PresenceCheck;
  serverErrors: ServerErrorCheck;
  minutes: number;
}

const verdict = (pass: boolean) => (pass ? 'pass' : '**FAIL**');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function storedRow(name: string, check: StoredCheck): string {
  return `| ${name} | ${check.acknowledged} | ${check.storedOnce} | ${check.storedUnacknowledged} | ${verdict(check.storedOnce === check.acknowledged)} |`;
}

function missingLines(name: string, check: DeliveryCheck): string {
  if (check.missing === 0) return '';
  const where = Object.entries(check.missingBySend)
    .map(([window, count]) => `${count} sent during ${window}`)
    .join(', ');
  return `\n${name} missing: ${where}; for example ${check.examples.join('; ')}.\n`;
}

/** The soak's markdown report: what ran, the fault windows, the counts and a verdict per check. */
export function soakReport(results: SoakResults): string {
  const { options, ledger, stored, delivery, presence, serverErrors } = results;
  const deliveryRow = (name: string, check: (typeof delivery)['dms']) =>
    `| ${name} | ${check.expected} | ${check.received} | ${check.toldLost} | ${check.missing} | ${verdict(check.missing === 0)} |`;
  const refusals = [...ledger.refusals].map(([key, count]) => `${key}: ${count}`).join(', ') || 'none';
  const none = (d: Disagreement) => d.lookup + d.subscription === 0;
  const disagreement = (d: Disagreement) => `lookup ${d.lookup}, peer subscription ${d.subscription}`;
  const presencePass =
    none(presence.notOnline) &&
    presence.convergedAfterSeconds !== undefined &&
    presence.convergedAfterSeconds <= 15;
  return `# Fault soak

\`${results.command}\`

${results.environment} ${results.code}

Three service processes on a private PostgreSQL and a private Redis; ${options.sockets} users with
one socket each (${results.connected} authenticated before the load), each in the chat of one of
${options.worlds} public worlds and subscribed to its peer's presence. For ${options.minutes} minutes:
a presence heartbeat per socket every ${options.heartbeatSeconds} s, ${options.dmRate} direct
messages/s (\`dm.send\`), ${options.chatRate} world chat messages/s (REST), ${options.chunkRate} chunk
writes/s by the world owners (\`chunks.put\` with the expected revision). A node killed with -9
every 30-60 s and started again at once, Redis and PostgreSQL each restarted once. Run time
${results.minutes.toFixed(1)} minutes.

## Faults

| Fault | From | To |
|---|---|---|
${results.faults.map((fault) => `| ${fault.what} | ${seconds(fault.from)} | ${seconds(fault.to)} |`).join('\n')}

A fault's window runs until its part is back, plus ${RECOVERY_GRACE_MS / 1000} s for clients and pools to reconnect.

## Acknowledged writes in the database

| Writes | Acknowledged | In the database exactly once | Stored without an acknowledgement | Check |
|---|---|---|---|---|
${storedRow('Direct messages', stored.dms)}
${storedRow('World chat messages', stored.chats)}
${storedRow('Chunk revisions', stored.revisions)}

## Events

| Events | Expected (event, user) | Received | Not received, told \`recovered: false\` | Missing | Check |
|---|---|---|---|---|---|
${deliveryRow('Direct messages (sender and recipient)', delivery.dms)}
${deliveryRow("World chat messages (the world's members)", delivery.chats)}
${missingLines('Direct messages', delivery.dms)}${missingLines('World chat messages', delivery.chats)}

Events received twice by one user: ${ledger.duplicates}. Reconnections: ${ledger.reconnects}
(failed attempts, retried: ${[...ledger.connectFailures].map(([reason, count]) => `${reason}: ${count}`).join(', ') || 'none'});
auth frames and chat joins with \`recover\` (retried attempts included): ${ledger.recoveries.recovered}
answered \`recovered: true\`, ${ledger.recoveries.notRecovered} \`recovered: false\`. Sockets
authenticated after the load, once the users had up to two minutes to reconnect:
${results.connectedAtEnd} of ${options.sockets}.

## Presence

| Check | Result | Check |
|---|---|---|
| Users not shown online after the load, of ${options.sockets} | ${disagreement(presence.notOnline)} | ${verdict(none(presence.notOnline))} |
| Node ${presence.victim} killed at the end: its ${presence.killedUsers} users shown offline, every other user online | ${presence.convergedAfterSeconds === undefined ? `not within 45 s (wrong: ${disagreement(presence.wrong)})` : `after ${presence.convergedAfterSeconds.toFixed(1)} s`} | ${verdict(presencePass)} |

## Server errors

| Check | Count | Check |
|---|---|---|
| 5xx answers and error frames (all) | ${serverErrors.total} (${
    Object.entries(serverErrors.byCode)
      .map(([code, n]) => `${code}: ${n}`)
      .join(', ') || 'none'
  }) | |
| outside the fault windows | ${serverErrors.outsideFaults} | ${verdict(serverErrors.outsideFaults === 0)} |
${serverErrors.examples.map((example) => `- outside: ${example}`).join('\n')}

Reasons the nodes logged for answering SERVICE_UNAVAILABLE outside the fault windows: ${
    Object.entries(serverErrors.reasonsOutside)
      .map(([reason, n]) => `${reason} (${n})`)
      .join(', ') || 'none'
  }.

Other counts: ${ledger.heartbeats} heartbeats acknowledged, ${ledger.chunkConflicts} chunk writes
answered REVISION_CONFLICT (a write whose answer was lost had committed), ${ledger.unanswered}
requests unanswered (their connection was cut), refusals below 500: ${refusals}.
`;
}
