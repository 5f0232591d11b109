import { configFrom } from '../../src/config.js';
import { executeBound, openDatabase } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { migrateUp } from '../../src/platform/migrate.js';

/**
 * Users for the data-path benchmark, written straight into the service's database before it
 * starts: the routes under test read and write real rows, and registering through argon2 would
 * only slow the setup. Their password hash matches no password; tokens are signed for their ids.
 * `idOf` gives user n's id (n from 1) for SQL that derives ids from numbers (pgbench); new ids otherwise.
 */
export async function seedUsers(
  env: Record<string, string>,
  count: number,
  idOf: (n: number) => string = () => newId(),
): Promise<string[]> {
  const config = configFrom(env);
  const db = await openDatabase(config);
  try {
    await migrateUp(db, config.DATABASE_URL);
    const ids = Array.from({ length: count }, (_, i) => idOf(i + 1)).sort();
    const now = new Date();
    await executeBound(
      db.data,
      `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
       select id, 'bench_' || n, '!', $1, $2 from unnest($3::uuid[]) with ordinality as t(id, n)`,
      [now, now, `{${ids.join(',')}}`],
    );
    return ids;
  } finally {
    await db.close();
  }
}
