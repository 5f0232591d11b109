import type { PGlite } from '@electric-sql/pglite';
import type { Database } from '../../src/platform/db.js';

/**
 * Embedded mode: starting PGlite from the template dump costs about a second of CPU, paid by
 * every test file and more than many files' tests. A worker runs its files one after another
 * (vitest.config.ts), so it keeps the database of a file that dropped it and hands it to the next
 * file reset to the template's state: every table emptied and the template's rows put back,
 * sequences where the template had them, session locks released. A database whose schema a test
 * changed, or that a test closed, is not reused.
 */

/** What a fresh clone of the template holds, read once per worker from a clone nobody used yet. */
interface TemplateState {
  schema: string;
  tables: string[];
  rows: { table: string; json: string }[];
  sequences: { name: string; lastValue: string; isCalled: boolean }[];
}

let template: TemplateState | undefined;
let parked: Database | undefined;
/** The database the running file drops is closed rather than kept (notTimeSafeToReuse). */
let closeNextDropped = false;

/**
 * For a file that ran the embedded database on a faked Date ahead of the real one: PGlite keeps
 * time by Date, and a Postgres timeout armed against the faked clock (the idle statistics timer)
 * is far in the future once the clock is real again. Its alarm then fires as a 1 ms timer
 * (Node's clamp for a delay past 2^31 ms) and re-arms itself, burning a core for the next files.
 * Such a database is closed when the file drops it, never handed on.
 */
export function notTimeSafeToReuse(): void {
  closeNextDropped = true;
}

/** Notes what a database fresh from the template holds, the first time the worker opens one. */
export async function rememberTemplate(db: Database): Promise<void> {
  if (template || !db.embedded) return;
  const pglite = db.embedded.pglite;
  const tables = (
    await pglite.query<{ name: string }>(
      `select quote_ident(tablename) as name from pg_tables where schemaname = 'public' order by 1`,
    )
  ).rows.map((row) => row.name);
  const rows: TemplateState['rows'] = [];
  for (const table of tables) {
    const [content] = (
      await pglite.query<{ json: string | null }>(`select json_agg(t)::text as json from ${table} t`)
    ).rows;
    if (content?.json) rows.push({ table, json: content.json });
  }
  const sequences = (
    await pglite.query<{ name: string; last_value: string; is_called: boolean }>(
      `select quote_ident(sequencename) as name, coalesce(last_value, start_value)::text as last_value,
              last_value is not null as is_called
         from pg_sequences where schemaname = 'public'`,
    )
  ).rows.map((row) => ({ name: row.name, lastValue: row.last_value, isCalled: row.is_called }));
  template = { schema: await schemaOf(pglite), tables, rows, sequences };
}

/** Keeps a dropped database for the next file of this worker; an older one kept is closed. */
export async function park(db: Database): Promise<void> {
  if (closeNextDropped) {
    closeNextDropped = false;
    await db.close();
    return;
  }
  const previous = parked;
  parked = db;
  await previous?.close();
}

/** The kept database reset to the template's state, or undefined when there is none to reuse. */
export async function takeParked(): Promise<Database | undefined> {
  const db = parked;
  parked = undefined;
  if (!db) return undefined;
  const reset = await resetToTemplate(db).catch(() => false);
  if (reset) return db;
  await db.close().catch(() => {});
  return undefined;
}

async function resetToTemplate(db: Database): Promise<boolean> {
  const pglite = db.embedded?.pglite;
  if (!pglite || pglite.closed || !template) return false;
  if ((await schemaOf(pglite)) !== template.schema) return false;
  const state = template;
  await pglite.query('select pg_advisory_unlock_all()');
  // DELETE and VACUUM the tables that hold rows, not TRUNCATE them all: a truncation gives each
  // table and index new files, several times the work for the few rows a test file leaves.
  const filled = await tablesWithRows(pglite, state.tables);
  await pglite.transaction(async (tx) => {
    // Replica mode skips triggers (the ledger's refusal of DELETE among them) and foreign keys.
    await tx.exec('set local session_replication_role = replica');
    if (filled.length > 0) await tx.exec(filled.map((table) => `delete from ${table};`).join('\n'));
    for (const { table, json } of state.rows)
      await tx.query(
        `insert into ${table} overriding system value
         select * from json_populate_recordset(null::${table}, $1::json)`,
        [json],
      );
    for (const { name, lastValue, isCalled } of state.sequences)
      await tx.query('select setval($1, $2::bigint, $3)', [name, lastValue, isCalled]);
  });
  // Deleted rows would otherwise pile up over the files a worker runs.
  if (filled.length > 0) await pglite.exec(`vacuum ${filled.join(', ')}`);
  return true;
}

async function tablesWithRows(pglite: PGlite, tables: readonly string[]): Promise<string[]> {
  const { rows } = await pglite.query<{ i: number }>(
    tables.map((table, i) => `select ${i} as i where exists (select 1 from ${table})`).join(' union all '),
  );
  return rows.map((row) => tables[row.i] as string);
}

/** Tables, their columns and types, indexes, constraints, triggers and functions, as one digest. */
async function schemaOf(pglite: PGlite): Promise<string> {
  const [row] = (
    await pglite.query<{ digest: string }>(
      `select md5(concat_ws('|',
         (select string_agg(c.relname || ':' || c.relkind::text || ':' || coalesce(a.attname, '') || ':' ||
                            coalesce(a.atttypid::text, ''), ',' order by c.relname, a.attnum)
            from pg_class c
            left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
           where c.relnamespace = 'public'::regnamespace),
         (select string_agg(conname, ',' order by conname) from pg_constraint
           where connamespace = 'public'::regnamespace),
         (select string_agg(tgname || ':' || tgenabled::text, ',' order by tgname) from pg_trigger where not tgisinternal),
         (select string_agg(proname, ',' order by proname) from pg_proc
           where pronamespace = 'public'::regnamespace))) as digest`,
    )
  ).rows;
  return row?.digest ?? '';
}
