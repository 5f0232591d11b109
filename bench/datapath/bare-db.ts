import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/**
 * The database of the bare comparison servers: `pg` with BARE_POOL_SIZE connections to
 * DATABASE_URL, or, with BARE_PGLITE_DIR, a PGlite on that data directory queried in process
 * (a copy of the service's embedded database: the fastest path PGlite offers).
 */
export interface BareDb {
  query<Row>(text: string, values: unknown[]): Promise<Row[]>;
}

export async function openBareDb(): Promise<BareDb> {
  const dir = process.env.BARE_PGLITE_DIR;
  if (dir) {
    const pglite = await PGlite.create({ dataDir: dir });
    return { query: async (text, values) => (await pglite.query(text, values)).rows as never };
  }
  const pool = new pg.Pool({
    connectionString: process.env.DATABASE_URL,
    max: Number(process.env.BARE_POOL_SIZE ?? 10),
  });
  // Named statements are prepared once per connection, as a lean service path would do.
  let names = 0;
  const named = new Map<string, string>();
  return {
    query: async (text, values) => {
      let name = named.get(text);
      if (!name) {
        name = `bare_${names++}`;
        named.set(text, name);
      }
      return (await pool.query({ name, text, values })).rows;
    },
  };
}

/** The users the benchmark seeded, in id order (the comparison servers map sockets to them). */
export async function seededUserIds(db: BareDb): Promise<string[]> {
  return (await db.query<{ id: string }>('select id from users order by id', [])).map((r) => r.id);
}
