import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * The table-ownership rule of docs/modules.md, checked from the source text (nothing is imported or
 * run): every table of migrations/ has exactly one owner; a module's SQL names only the tables it
 * owns (another module's rows come through that module's API or the SQL fragments its index.ts
 * exports, whose text lives in the owner's files, and tests in test/<owner>/sql-fragments.test.ts);
 * a module imports another module only when its `needs` lists it.
 */

/** A rule broken, with the file that breaks it (relative to the checked root). */
export interface Problem {
  file: string;
  message: string;
}

/** What a module declares in its defineModule call. */
export interface ModuleDeclaration {
  name: string;
  folder: string;
  needs: string[];
  tables: string[];
}

/**
 * Tables of no module: the platform's own (the session revocation log behind AccessTokens,
 * src/platform/auth/revocation-log.ts; the outbox's events and deliveries, src/platform/outbox.ts).
 * The platform's SQL is held to them like a module's.
 */
export const PLATFORM: ModuleDeclaration = {
  name: 'platform',
  folder: 'src/platform',
  needs: [],
  tables: ['session_revocations', 'outbox_events', 'outbox_deliveries'],
};

/** A string is taken for SQL when it has a statement's shape, so prose naming a table is not. */
const SQL_SHAPE = /\b(select\s[\s\S]*\bfrom|insert\s+into|update\s+\w+(\s+\w+)?\s+set|delete\s+from)\b/i;
/** Where SQL names a table: what follows these keywords. */
const TABLE_REFERENCE = /\b(delete\s+from|from|join|update|into|truncate)\s+(?:only\s+)?([a-z_][a-z0-9_]*)/gi;

export function checkTableOwnership(root: string): Problem[] {
  const problems: Problem[] = [];
  const migrations = migrationTables(root);
  const modules = moduleDeclarations(root, problems);
  const owners = new Map<string, string[]>();
  for (const owner of [...modules, PLATFORM]) {
    for (const table of owner.tables) owners.set(table, [...(owners.get(table) ?? []), owner.name]);
  }
  for (const [table, file] of migrations) {
    const names = owners.get(table) ?? [];
    if (names.length !== 1) {
      const who = names.length === 0 ? 'no module' : `${names.length} modules (${names.join(', ')})`;
      problems.push({ file, message: `table ${table} is owned by ${who}; it needs exactly one owner` });
    }
  }
  for (const [table, names] of owners) {
    if (!migrations.has(table)) {
      problems.push({
        file: 'migrations/',
        message: `${names.join(', ')} owns ${table}, which no migration creates`,
      });
    }
  }
  for (const module of modules) problems.push(...untestedFragments(root, module));
  for (const owner of [...modules, PLATFORM]) {
    for (const file of sourceFiles(join(root, owner.folder))) {
      const path = relative(root, file);
      const source = ts.createSourceFile(path, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
      problems.push(...undeclaredImports(source, owner));
      problems.push(...foreignTables(source, owner.name, owner.tables, migrations, owners));
    }
  }
  return problems;
}

/** Each table a migration creates, with the migration's file. */
export function migrationTables(root: string): Map<string, string> {
  const tables = new Map<string, string>();
  for (const file of sourceFiles(join(root, 'migrations'))) {
    for (const match of readFileSync(file, 'utf8').matchAll(
      /create\s+table\s+(?:if\s+not\s+exists\s+)?(\w+)/gi,
    )) {
      tables.set((match[1] as string).toLowerCase(), relative(root, file));
    }
  }
  return tables;
}

/** The defineModule call of each src/modules/<name>/index.ts: its name, needs and tables. */
export function moduleDeclarations(root: string, problems: Problem[]): ModuleDeclaration[] {
  const modulesDir = join(root, 'src/modules');
  const declarations: ModuleDeclaration[] = [];
  for (const folder of readdirSync(modulesDir)) {
    const index = join(modulesDir, folder, 'index.ts');
    if (!statSync(join(modulesDir, folder)).isDirectory()) continue;
    const path = relative(root, index);
    if (!existsSync(index)) {
      problems.push({ file: path, message: 'every module folder declares its module in index.ts' });
      continue;
    }
    const source = ts.createSourceFile(path, readFileSync(index, 'utf8'), ts.ScriptTarget.ES2022, true);
    const definition = findDefineModule(source);
    const name = definition && stringProperty(definition, 'name');
    const needs = definition && stringArrayProperty(definition, 'needs');
    const tables = definition && stringArrayProperty(definition, 'tables');
    if (!name || !needs || !tables) {
      problems.push({ file: path, message: 'defineModule needs a literal name, needs and tables' });
      continue;
    }
    declarations.push({ name, folder: relative(root, join(modulesDir, folder)), needs, tables });
  }
  return declarations;
}

function findDefineModule(source: ts.SourceFile): ts.ObjectLiteralExpression | undefined {
  let found: ts.ObjectLiteralExpression | undefined;
  const visit = (node: ts.Node) => {
    if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'defineModule' &&
      node.arguments[0] &&
      ts.isObjectLiteralExpression(node.arguments[0])
    ) {
      found = node.arguments[0];
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function propertyValue(object: ts.ObjectLiteralExpression, key: string): ts.Expression | undefined {
  for (const property of object.properties) {
    if (ts.isPropertyAssignment(property) && ts.isIdentifier(property.name) && property.name.text === key) {
      return property.initializer;
    }
  }
  return undefined;
}

function stringProperty(object: ts.ObjectLiteralExpression, key: string): string | undefined {
  const value = propertyValue(object, key);
  return value && ts.isStringLiteral(value) ? value.text : undefined;
}

function stringArrayProperty(object: ts.ObjectLiteralExpression, key: string): string[] | undefined {
  const value = propertyValue(object, key);
  if (!value || !ts.isArrayLiteralExpression(value)) return undefined;
  const strings = value.elements.filter(ts.isStringLiteral).map((element) => element.text);
  return strings.length === value.elements.length ? strings : undefined;
}

/** The SQL fragments (exports named `<what>Sql`) of the module's index.ts its fragment test does not name. */
function untestedFragments(root: string, module: ModuleDeclaration): Problem[] {
  const index = join(root, module.folder, 'index.ts');
  const source = ts.createSourceFile(index, readFileSync(index, 'utf8'), ts.ScriptTarget.ES2022, true);
  const exported: string[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement) && !statement.isTypeOnly && statement.exportClause) {
      if (ts.isNamedExports(statement.exportClause)) {
        exported.push(...statement.exportClause.elements.map((element) => element.name.text));
      }
    } else if (ts.isVariableStatement(statement) && statement.modifiers?.some(isExportKeyword)) {
      exported.push(
        ...statement.declarationList.declarations.map((declaration) => declaration.name.getText()),
      );
    }
  }
  const testPath = join('test', relative('src/modules', module.folder), 'sql-fragments.test.ts');
  const test = existsSync(join(root, testPath)) ? readFileSync(join(root, testPath), 'utf8') : '';
  return exported
    .filter((name) => name.endsWith('Sql') && !new RegExp(`\\b${name}\\b`).test(test))
    .map((name) => ({
      file: relative(root, index),
      message: `${module.name} exports the SQL fragment ${name}, which ${testPath} does not test`,
    }));
}

const isExportKeyword = (modifier: ts.ModifierLike) => modifier.kind === ts.SyntaxKind.ExportKeyword;

/** Imports (type-only ones too) of another module's index.ts that the module's `needs` does not list. */
function undeclaredImports(source: ts.SourceFile, module: ModuleDeclaration): Problem[] {
  const problems: Problem[] = [];
  for (const statement of source.statements) {
    if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement))) continue;
    const specifier = statement.moduleSpecifier;
    if (!specifier || !ts.isStringLiteral(specifier)) continue;
    const other = /^\.\.\/([^/]+)\/index\.js$/.exec(specifier.text)?.[1];
    if (other && other !== module.name && !module.needs.includes(other)) {
      const line = source.getLineAndCharacterOfPosition(statement.getStart(source)).line + 1;
      problems.push({
        file: `${source.fileName}:${line}`,
        message: `${module.name} imports ${other}'s index.ts but its needs do not list ${other}`,
      });
    }
  }
  return problems;
}

/** The tables of others that the SQL strings of the file name. */
function foreignTables(
  source: ts.SourceFile,
  owner: string,
  owned: readonly string[],
  migrations: ReadonlyMap<string, string>,
  owners: ReadonlyMap<string, string[]>,
): Problem[] {
  const problems: Problem[] = [];
  const visit = (node: ts.Node) => {
    const text = literalText(node);
    if (text !== undefined && SQL_SHAPE.test(text)) {
      for (const [, keyword, name] of text.matchAll(TABLE_REFERENCE)) {
        const table = (name as string).toLowerCase();
        if (!migrations.has(table) || owned.includes(table)) continue;
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        const verb = /^(from|join)$/i.test(keyword as string) ? 'reads' : 'writes';
        const by = owners.get(table)?.join(', ') ?? 'no module';
        problems.push({
          file: `${source.fileName}:${line}`,
          message: `${owner} ${verb} table ${table}, owned by ${by}: use its API or a fragment its index.ts exports`,
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

/** A string literal's text; a template's text with each substitution as a placeholder. */
function literalText(node: ts.Node): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) {
    return [node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join(' $expr ');
  }
  return undefined;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
    .map((name) => join(dir, name))
    .sort();
}
