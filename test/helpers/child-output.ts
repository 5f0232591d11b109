import type { ChildProcess } from 'node:child_process';

/**
 * Resolves once a server process wrote `line` to its `stream`; rejects, with the output's tail
 * and the process killed, when it exits, fails to spawn or stays silent for `timeoutMs`. The
 * stream is read for as long as the process runs: a server that keeps logging into a full pipe
 * would block.
 */
export function untilOutputLine(
  child: ChildProcess,
  stream: 'stdout' | 'stderr',
  line: string,
  options: { name: string; timeoutMs: number },
): Promise<void> {
  let output = '';
  let ready = false;
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`${options.name} did not start:\n${output}`)),
      options.timeoutMs,
    );
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`${options.name} exited with ${code}:\n${output}`)));
    child[stream]?.on('data', (chunk: Buffer) => {
      if (ready) return;
      // Kept short: a server logs for as long as it runs.
      output = (output + chunk.toString()).slice(-8_000);
      if (!output.includes(line)) return;
      ready = true;
      clearTimeout(timer);
      child.removeListener('exit', fail);
      child.removeListener('error', fail);
      resolve();
    });
  });
}
