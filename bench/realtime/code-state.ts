import { execFileSync } from 'node:child_process';

/** Which code the service ran (read-only git queries); other people may be changing it meanwhile. */

export interface CodeState {
  head: string;
  /** Uncommitted changes to the service's code (git status of src, protocol, migrations). */
  dirty: string[];
  /** Changes whenever the service's code does, committed or not (not with commits elsewhere). */
  fingerprint: string;
}

export function codeState(): CodeState | undefined {
  const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  try {
    const serviceDirs = ['src', 'protocol', 'migrations'];
    const paths = ['--', ...serviceDirs];
    const head = git('rev-parse', '--short', 'HEAD').trim();
    const trees = git('rev-parse', ...serviceDirs.map((dir) => `HEAD:${dir}`));
    const status = git('status', '--porcelain', ...paths);
    const diff = git('diff', 'HEAD', ...paths);
    const dirty = status
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(3));
    return { head, dirty, fingerprint: `${trees}\n${status}\n${diff}` };
  } catch {
    return undefined;
  }
}

/** The report's line about the code, from its state before and after the run. */
export function codeLine(before: CodeState | undefined, after: CodeState | undefined): string {
  if (!before) return 'Service code: not a git checkout.';
  const dirty =
    before.dirty.length === 0 ? 'no uncommitted changes' : `uncommitted changes (${before.dirty.join(', ')})`;
  const changed =
    after && after.fingerprint !== before.fingerprint
      ? ` **The service's code changed during the run** (now ${after.head}${after.dirty.length ? ' with uncommitted changes' : ''}); phases started later may have run different code.`
      : ' It did not change during the run.';
  return `Service code: commit ${before.head}, ${dirty} in src, protocol and migrations.${changed}`;
}
