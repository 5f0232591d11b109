import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG = join(root, 'src/config.ts');

/**
 * Platform files that still import src/config.ts while the database layer is being rewritten:
 * they move to PlatformConfig (src/platform/platform-config.ts) with it, and then leave this list.
 */
const NOT_YET_ON_PLATFORM_CONFIG = new Set<string>([]);

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The files a source text imports or re-exports, statically or dynamically, as absolute .ts paths. */
function importedFiles(file: string, source: string): string[] {
  const specifiers = [
    ...source.matchAll(/\bfrom\s+['"]([^'"]+)['"]/g),
    ...source.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
    ...source.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
  ].map((match) => match[1] as string);
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => resolve(dirname(file), specifier).replace(/\.js$/, '.ts'));
}

const importsConfig = (file: string) => importedFiles(file, readFileSync(file, 'utf8')).includes(CONFIG);

describe('the platform configuration', () => {
  it("is read through PlatformConfig: no file under src/platform imports src/config.ts (every module's settings)", () => {
    const found = filesUnder(join(root, 'src/platform'))
      .filter(importsConfig)
      .map((file) => relative(root, file))
      .filter((file) => !NOT_YET_ON_PLATFORM_CONFIG.has(file));
    expect(found).toEqual([]);
  });

  it('lists as not yet switched only files that still import src/config.ts', () => {
    const switched = [...NOT_YET_ON_PLATFORM_CONFIG].filter(
      (file) => existsSync(join(root, file)) && !importsConfig(join(root, file)),
    );
    expect(switched, 'remove these from NOT_YET_ON_PLATFORM_CONFIG').toEqual([]);
  });

  it('finds static, type-only, re-exported and dynamic imports', () => {
    const file = join(root, 'src/platform/example.ts');
    const source = [
      "import type { Config } from '../config.js';",
      "export { configFrom } from '../config.js';",
      "const config = await import('../config.js');",
      "import '../config.js';",
      "import { z } from 'zod';",
    ].join('\n');
    expect(importedFiles(file, source)).toEqual([CONFIG, CONFIG, CONFIG, CONFIG]);
  });
});
