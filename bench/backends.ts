import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';

/** The two ways a scenario runs the service: embedded PGlite with the in-process KV, or Postgres + Redis. */
export type Backend = 'embedded' | 'postgres';

/**
 * The options scenarios share: `--backends embedded,postgres` (both by default) and `--profile DIR`
 * (a V8 CPU profile of each atrium instance; scenarios without profiling ignore it).
 */
export function scenarioOptions(): { backends: Backend[]; profile: string | undefined; compiled: boolean } {
  const { values } = parseArgs({
    options: { backends: { type: 'string' }, profile: { type: 'string' }, compiled: { type: 'boolean' } },
    allowPositionals: true,
    strict: false,
  });
  return {
    backends: String(values.backends ?? 'embedded,postgres').split(',') as Backend[],
    profile: typeof values.profile === 'string' ? values.profile : undefined,
    compiled: values.compiled === true,
  };
}

/** The machine as a report's first lines give it. */
export function machineLine(): string {
  return `Node ${process.version}, ${availableParallelism()} cores, load average ${loadavg()[0]?.toFixed(1)} at the start.`;
}
