import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What the buyers of both loads buy with: their tokens, and one active listing per seller. */
export interface Market {
  buyers: { id: string; token: string }[];
  listings: string[];
}

export const progress = (message: string) => console.log(`[bench:economy] ${message}`);

/** `atrium economy verify` on the service's database, as an operator runs it. */
export async function verify(env: Record<string, string>): Promise<{ clean: boolean; output: string }> {
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts', 'economy', 'verify'], {
      env: { ...process.env, ...env, LOG_LEVEL: 'silent' },
      maxBuffer: 64 * 2 ** 20,
    });
    return { clean: true, output: stdout.trim() };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (failed.code !== 1) throw error;
    return { clean: false, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`.trim() };
  }
}
