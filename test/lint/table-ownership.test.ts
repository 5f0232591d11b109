import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { checkTableOwnership } from '../../scripts/table-ownership.js';

/** A source tree in a temporary folder: path -> text. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'atrium-tables-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

const migration = `this.addSql('create table apples (id uuid)');
this.addSql('create table pears (id uuid)');
this.addSql('create table session_revocations (session_id uuid)');
this.addSql('create table outbox_events (id uuid)');
this.addSql('create table outbox_deliveries (event_id uuid)');`;
const platform = "const sql = 'select session_id from session_revocations where revoked_at >= $1';";
const fruit = `export const appleSql = (id: string) => \`exists (select 1 from apples where id = \${id})\`;
export const fruitModule = defineModule({ name: 'fruit', tables: ['apples'], needs: [], setup() {} });`;
/** Fruit owns apples and exports a fragment it tests; the platform keeps its one table. */
const base = {
  'migrations/0001_fruit.ts': migration,
  'src/platform/revocations.ts': platform,
  'src/modules/fruit/index.ts': fruit,
  'test/fruit/sql-fragments.test.ts': "it('appleSql is true for an apple', () => {});",
};
const basket = (needs: string) =>
  `export const basketModule = defineModule({ name: 'basket', tables: ['pears'], needs: [${needs}], setup() {} });`;

describe('the table-ownership check', () => {
  it('passes a tree where each module names only its own tables and reads others through fragments', () => {
    const root = tree({
      ...base,
      'src/modules/basket/index.ts': basket("'fruit'"),
      'src/modules/basket/basket.repository.ts': `import { appleSql } from '../fruit/index.js';
const q = \`select id from pears where \${appleSql('pears.id')}\`;
const prose = 'Picks the ripe ones from apples';`,
    });
    expect(checkTableOwnership(root)).toEqual([]);
  });

  it("fails naming the file and table when a module's SQL reads or writes another module's table", () => {
    const root = tree({
      ...base,
      'src/modules/basket/index.ts': basket("'fruit'"),
      'src/modules/basket/basket.repository.ts': `const ok = 'select id from pears';
const read = \`select p.id from pears p join apples a on a.id = p.id where p.id = \${'$1'}\`;
const write = 'delete from apples where id = $1';`,
    });
    expect(checkTableOwnership(root)).toEqual([
      {
        file: 'src/modules/basket/basket.repository.ts:2',
        message: 'basket reads table apples, owned by fruit: use its API or a fragment its index.ts exports',
      },
      {
        file: 'src/modules/basket/basket.repository.ts:3',
        message: 'basket writes table apples, owned by fruit: use its API or a fragment its index.ts exports',
      },
    ]);
  });

  it('fails when a module imports another module it does not list in needs', () => {
    const root = tree({
      ...base,
      'src/modules/basket/index.ts': basket(''),
      'src/modules/basket/basket.service.ts': "import type { FruitApi } from '../fruit/index.js';",
    });
    expect(checkTableOwnership(root)).toEqual([
      {
        file: 'src/modules/basket/basket.service.ts:1',
        message: "basket imports fruit's index.ts but its needs do not list fruit",
      },
    ]);
  });

  it('fails when a table has no owner or two, or a module owns a table no migration creates', () => {
    const root = tree({
      ...base,
      'migrations/0001_fruit.ts': `${migration}\nthis.addSql('create table plums (id uuid)');`,
      'src/modules/fruit/index.ts': fruit.replace(
        "tables: ['apples']",
        "tables: ['apples', 'pears', 'figs']",
      ),
      'src/modules/basket/index.ts': basket("'fruit'"),
    });
    expect(checkTableOwnership(root)).toEqual([
      {
        file: 'migrations/0001_fruit.ts',
        message: 'table pears is owned by 2 modules (basket, fruit); it needs exactly one owner',
      },
      {
        file: 'migrations/0001_fruit.ts',
        message: 'table plums is owned by no module; it needs exactly one owner',
      },
      { file: 'migrations/', message: 'fruit owns figs, which no migration creates' },
    ]);
  });

  it('fails when a module exports an SQL fragment its fragment test does not name', () => {
    const root = tree({
      ...base,
      'src/modules/fruit/index.ts': `${fruit}\nexport { pearSql } from './pears.js';`,
      'src/modules/basket/index.ts': basket("'fruit'"),
    });
    expect(checkTableOwnership(root)).toEqual([
      {
        file: 'src/modules/fruit/index.ts',
        message:
          'fruit exports the SQL fragment pearSql, which test/fruit/sql-fragments.test.ts does not test',
      },
    ]);
  });

  it('finds nothing to report in the repository itself', () => {
    expect(checkTableOwnership(fileURLToPath(new URL('../..', import.meta.url)))).toEqual([]);
  });
});
