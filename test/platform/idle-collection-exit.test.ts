import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';

describe('the idle collection through the inspector', () => {
  it('leaves a process that collected free to exit by itself', async () => {
    // A session closed from within its answer's dispatch would keep the loop from ever ending.
    const script = [
      "const { IdleCollection } = await import('./src/platform/idle-collection.ts');",
      'const collected = await new IdleCollection({ utilization: () => 0 }).check();',
      "process.stdout.write(collected ? 'collected' : 'skipped');",
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code, signal] = await once(child, 'exit');
    clearTimeout(killer);
    expect(output).toBe('collected');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  }, 30_000);
});
