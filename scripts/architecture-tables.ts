import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import ts from 'typescript';
import { httpStatusByCode } from '../protocol/errors.js';
import {
  type ModuleDeclaration,
  migrationTables,
  moduleDeclarations,
  PLATFORM,
  type Problem,
} from './table-ownership.js';

/**
 * The parts of docs/architecture.md that are facts of the code, written from it so they cannot
 * drift: the error codes (protocol/errors/), the migrations (migrations/index.ts) and the modules
 * with what they need and own (src/modules/index.ts and each defineModule call, read as the
 * table-ownership lint reads them). Each fills a region between `<!-- generated:<name> -->` and
 * `<!-- /generated -->`; `npm run docs:generate` rewrites them and a test fails when they differ.
 */

export const ARCHITECTURE_DOC = 'docs/architecture.md';

/** The document with every generated region rewritten from the code under root. */
export function withGeneratedRegions(root: string, document: string): string {
  const regions: Record<string, () => string> = {
    errors: () => errorTable(root),
    migrations: () => migrationTable(root),
    modules: () => moduleTable(root),
  };
  let result = document;
  for (const [name, render] of Object.entries(regions)) {
    const pattern = new RegExp(`(<!-- generated:${name} -->\\n)[\\s\\S]*?(<!-- /generated -->)`);
    if (!pattern.test(result))
      throw new Error(`${ARCHITECTURE_DOC} has no region <!-- generated:${name} -->`);
    result = result.replace(pattern, (_, start: string, end: string) => `${start}${render()}${end}`);
  }
  return result;
}

/** Code, HTTP status, the part that declares it and its doc comment, in the assembled order. */
function errorTable(root: string): string {
  const declared = new Map<string, { part: string; doc: string }>();
  const dir = join(root, 'protocol/errors');
  for (const file of readdirSync(dir).sort()) {
    const source = parse(root, join(dir, file));
    const visit = (node: ts.Node) => {
      if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name)) {
        declared.set(node.name.text, { part: basename(file, '.ts'), doc: oneLine(docComment(node)) });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  const rows = Object.entries(httpStatusByCode).map(([code, status]) => {
    const entry = declared.get(code);
    if (!entry?.doc) throw new Error(`error code ${code} needs a doc comment in protocol/errors/`);
    return [`\`${code}\``, String(status), entry.part, entry.doc];
  });
  return table(['Code', 'HTTP status', 'Declared in', 'Meaning'], rows);
}

/** Each migration in the order it applies, with the tables it creates and its summary. */
function migrationTable(root: string): string {
  const created = new Map<string, string[]>();
  for (const [table, file] of migrationTables(root)) created.set(file, [...(created.get(file) ?? []), table]);
  const list = readFileSync(join(root, 'migrations/index.ts'), 'utf8');
  const rows = [...list.matchAll(/\{ name: '([^']+)', class: \w+ \}/g)].map((match) => {
    const name = match[1] as string;
    const file = `migrations/${name}.ts`;
    const migration = parse(root, join(root, file)).statements.find(ts.isClassDeclaration);
    const summary = migration ? firstSentence(docComment(migration)) : '';
    if (!summary) throw new Error(`${file} needs a doc comment on its migration class`);
    const tables = (created.get(file) ?? []).map((t) => `\`${t}\``).join(', ');
    return [`\`${name}\``, tables || '-', summary];
  });
  if (rows.length === 0) throw new Error('migrations/index.ts: no `{ name, class }` entries found');
  return table(['Migration', 'Creates tables', 'What it does'], rows);
}

/** The modules in build order: what each needs and the tables it owns, then the platform's tables. */
function moduleTable(root: string): string {
  const problems: Problem[] = [];
  const byFolder = new Map<string, ModuleDeclaration>();
  for (const module of moduleDeclarations(root, problems)) byFolder.set(basename(module.folder), module);
  if (problems.length > 0) throw new Error(problems.map((p) => `${p.file}: ${p.message}`).join('\n'));
  const list = readFileSync(join(root, 'src/modules/index.ts'), 'utf8');
  const folderOf = new Map(
    [...list.matchAll(/import \{ (\w+) \} from '\.\/([\w-]+)\/index\.js';/g)].map((m) => [m[1], m[2]]),
  );
  const order = /export const modules = \[([\s\S]*?)\]/.exec(list)?.[1]?.match(/\w+/g) ?? [];
  const modules = order.map((name) => {
    const module = byFolder.get(folderOf.get(name) ?? '');
    if (!module)
      throw new Error(`src/modules/index.ts: ${name} is not imported from a module folder's index.ts`);
    return module;
  });
  if (modules.length !== byFolder.size)
    throw new Error('src/modules/index.ts does not list every module folder');
  const names = (items: string[]) => (items.length > 0 ? items.map((i) => `\`${i}\``).join(', ') : '-');
  const rows = [...modules, PLATFORM].map((module) => [
    module === PLATFORM ? '(platform)' : `\`${module.name}\``,
    module.folder,
    names(module.needs),
    names(module.tables),
  ]);
  return table(['Module', 'Folder', 'Needs', 'Owns tables'], rows);
}

function parse(root: string, file: string): ts.SourceFile {
  return ts.createSourceFile(relative(root, file), readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
}

/** The text of a node's doc comment, its line breaks kept. */
function docComment(node: ts.Node): string {
  return ts
    .getJSDocCommentsAndTags(node)
    .filter(ts.isJSDoc)
    .map((doc) => ts.getTextOfJSDocComment(doc.comment) ?? '')
    .join('\n')
    .trim();
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * A summary: the first sentence of the comment's first paragraph (a list starts a paragraph), or
 * that paragraph up to the colon that introduces what follows.
 */
function firstSentence(text: string): string {
  const paragraph = oneLine(text.split(/\n\s*(?:\n|- )/)[0] ?? '');
  const sentence = /^(.*?\.)(\s|$)/.exec(paragraph)?.[1] ?? paragraph;
  return sentence.replace(/:$/, '.');
}

/** A Markdown table whose columns but the last (prose) are padded, so the file reads as a table too. */
function table(header: string[], rows: string[][]): string {
  const cells = [header, ...rows].map((row) => row.map((cell) => cell.replaceAll('|', '\\|')));
  const last = header.length - 1;
  const widths = header.map((_, i) =>
    i === last ? 3 : Math.max(3, ...cells.map((row) => (row[i] as string).length)),
  );
  const line = (row: string[]) =>
    `| ${row.map((cell, i) => (i === last ? cell : cell.padEnd(widths[i] as number))).join(' | ')} |`;
  const rule = `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`;
  const [head, ...body] = cells as [string[], ...string[][]];
  return `${[line(head), rule, ...body.map(line)].join('\n')}\n`;
}
