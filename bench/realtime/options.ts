import { parseArgs } from 'node:util';

/** Command line of the realtime benchmark (`--seconds` is read by bench/run.ts). */

export const USAGE =
  'npm run bench -- realtime [--seconds N] [--connections N] [--phases single,bare,cluster]';
const DEFAULT_CONNECTIONS = 18_000;

/** In the order they run. */
export const PHASES = ['single', 'bare', 'cluster'] as const;
export type Phase = (typeof PHASES)[number];

/** What each phase covers, for the usage text and the report. */
export const PHASE_COVERS: Record<Phase, string> = {
  single:
    "one atrium instance (embedded PGlite, in-process KV): its idle-socket memory, then, restarted, its heartbeat frames/s and REST req/s in interleaved rounds with the bare peers (bench/bare-uws.ts's echo, bench/bare-fastify.ts), which it starts for those rounds",
  bare: "the bare uWS server's idle-socket memory, the reference for the memory figures (no throughput: the bare peers' throughput is measured in the rounds of the atrium phases)",
  cluster:
    "two atrium instances sharing Redis and Postgres: the idle-socket memory of both, then instance #1's (restarted) frames/s and REST req/s in interleaved rounds with the bare peers, as in single",
};

export interface Options {
  connections: number;
  phases: Set<Phase>;
}

export function optionsFromArgv(): Options {
  const { values } = parseArgs({
    options: { connections: { type: 'string' }, phases: { type: 'string' } },
    allowPositionals: true,
    strict: false,
  });
  const connections = Number(values.connections) || DEFAULT_CONNECTIONS;
  const requested =
    typeof values.phases === 'string' ? values.phases.split(',').map((p) => p.trim()) : [...PHASES];
  const unknown = requested.filter((p) => !(PHASES as readonly string[]).includes(p));
  if (unknown.length > 0)
    throw new Error(
      `Unknown phase(s) ${unknown.join(', ')}. Usage: ${USAGE}\n${PHASES.map((p) => `  ${p}: ${PHASE_COVERS[p]}`).join('\n')}`,
    );
  return { connections, phases: new Set(requested as Phase[]) };
}
