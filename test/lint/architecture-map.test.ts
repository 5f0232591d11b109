import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The module map of docs/architecture.md (its first code block) is written by hand, so it is
 * checked against the tree instead: a file added, renamed or removed without the map saying so
 * fails here, and the map cannot describe a file that is gone.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
const mapStart = doc.indexOf('```\nsrc/');
const map = doc.slice(mapStart, doc.indexOf('\n```', mapStart + 4));

function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The protocol files the catalogue gathers (`export * from './<domain>.js'`), by stem. */
function catalogueDomains(): string[] {
  const catalogue = readFileSync(join(root, 'protocol/operations.ts'), 'utf8');
  return [...catalogue.matchAll(/^export \* from '\.\/([\w-]+)\.js';$/gm)].map((match) => match[1] as string);
}

/** Whether the map names `file` by its base name, as a whole word. */
const named = (file: string) =>
  new RegExp(`(^|[\\s(])${basename(file).replaceAll('.', '\\.')}\\b`, 'm').test(map);

describe('the module map of docs/architecture.md', () => {
  it('was found', () => {
    expect(mapStart).toBeGreaterThan(0);
    expect(map).toContain('platform/');
  });

  it('names every file of src/ outside the modules, and of scripts/', () => {
    const files = [...filesUnder('src'), ...filesUnder('scripts')].filter(
      (file) => !file.startsWith('src/modules/') || file === 'src/modules/index.ts',
    );
    expect(files.length).toBeGreaterThan(50);
    expect(files.filter((file) => !named(file))).toEqual([]);
  });

  it('names every module folder', () => {
    const folders = readdirSync(join(root, 'src/modules'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !new RegExp(`^\\s+${folder}/`, 'm').test(map))).toEqual([]);
  });

  it('names every protocol file, the domains of the catalogue in its list', () => {
    const domains = catalogueDomains();
    expect(domains).toContain('worlds');
    const listStart = map.indexOf('<domain>.ts');
    const list = map.slice(listStart, map.indexOf('\n  frames.ts', listStart));
    const listed = new Set(list.match(/[\w-]+/g));
    expect(domains.filter((domain) => !listed.has(domain))).toEqual([]);
    const others = readdirSync(join(root, 'protocol')).filter(
      (name) => name.endsWith('.ts') && !domains.includes(basename(name, '.ts')),
    );
    expect(others.filter((name) => !named(name))).toEqual([]);
  });

  it('names no file that does not exist', () => {
    const existing = new Set(
      ['src', 'protocol', 'scripts', 'migrations', 'bench', 'test'].flatMap((dir) =>
        filesUnder(dir).map((file) => basename(file)),
      ),
    );
    // `<domain>.ts` and `*.routes.ts` are patterns, not files.
    const names = [...map.matchAll(/(?<![<*.\w-])([\w-]+(?:\.[\w-]+)*\.ts)\b/g)].map(
      (match) => match[1] as string,
    );
    expect(names.length).toBeGreaterThan(50);
    expect(names.filter((name) => !existing.has(name))).toEqual([]);
  });
});
