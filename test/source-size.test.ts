import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** Past this a file holds more than one idea: split it along a seam rather than raise the limit. */
const MAX_LINES = 400;
const root = fileURLToPath(new URL('..', import.meta.url));

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(root, dir), { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return sourceFiles(path);
      return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
    }),
  );
  return nested.flat();
}

function lineCount(text: string): number {
  const lines = text.split('\n').length;
  return text.endsWith('\n') ? lines - 1 : lines;
}

describe('source size', () => {
  it(`keeps every TypeScript file of src/ and protocol/ outside the tests at ${MAX_LINES} lines or fewer`, async () => {
    const files = [...(await sourceFiles('src')), ...(await sourceFiles('protocol'))];
    expect(files.length).toBeGreaterThan(100);
    const sizes = await Promise.all(
      files.map(async (file) => ({ file, lines: lineCount(await readFile(join(root, file), 'utf8')) })),
    );
    expect(sizes.filter(({ lines }) => lines > MAX_LINES)).toEqual([]);
  });
});
