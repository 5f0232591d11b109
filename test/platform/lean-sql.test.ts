import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configFrom } from '../../src/config.js';
import { type DataAccess, transaction } from '../../src/platform/data-access.js';
import { type Database, executeBound, openDatabase } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { createTestDatabase, queryRows, singleConnection, type TestDatabase } from '../helpers/database.js';

const onPostgres = Boolean(process.env.DATABASE_URL);

/**
 * executeBound, the lean SQL path of src/platform/db.ts, on real databases: embedded PGlite by
 * default, the Postgres server of DATABASE_URL in the second pass.
 */
describe('the lean SQL path (executeBound)', () => {
  let testDb: TestDatabase;
  /**
   * One pooled connection on the same database: the embedded database always has exactly one, and
   * on Postgres a second handle opened with DATABASE_POOL_SIZE 1, so consecutive calls are known to
   * share a connection (and its prepared statements).
   */
  let single: Database;
  let oneConnection: Awaited<ReturnType<typeof singleConnection>> | undefined;
  const db = () => testDb.db;
  const data = (): DataAccess => db().data;

  const createdUsers: string[] = [];
  const createdRevocations: string[] = [];

  beforeAll(async () => {
    testDb = await createTestDatabase();
    oneConnection = await singleConnection(testDb);
    single = oneConnection.db;
  });
  afterAll(async () => {
    await oneConnection?.close();
    await testDb?.drop();
  });
  // Cleanup goes through the ORM's own path, so it does not depend on what is under test.
  afterEach(async () => {
    const users = createdUsers.splice(0);
    const revocations = createdRevocations.splice(0);
    if (users.length > 0)
      await queryRows(db(), 'delete from users where id = any(?::uuid[])', [`{${users}}`]);
    if (revocations.length > 0) {
      await queryRows(db(), 'delete from session_revocations where session_id = any(?::uuid[])', [
        `{${revocations}}`,
      ]);
    }
  });

  const userId = () => {
    const id = newId();
    createdUsers.push(id);
    return id;
  };
  const revocationId = () => {
    const id = newId();
    createdRevocations.push(id);
    return id;
  };
  const username = () => `lean_${randomBytes(6).toString('hex')}`;
  const insertUser = (on: DataAccess, id: string, name = username()) =>
    executeBound(
      on,
      `insert into users (id, username, password_hash, terms_accepted_at, adult_confirmed_at)
       values ($1, $2, 'x', now(), now())`,
      [id, name],
    );
  const insertRevocation = 'insert into session_revocations (session_id, revoked_at) values ($1, now())';
  const revocationsAmong = async (ids: string[]) =>
    (
      await queryRows<{ session_id: string }>(
        db(),
        'select session_id from session_revocations where session_id = any(?::uuid[]) order by session_id',
        [`{${ids}}`],
      )
    ).map((row) => row.session_id);
  /** The error a promise rejects with (fails the test when it resolves). */
  const rejection = async (promise: Promise<unknown>) => {
    const outcome = await promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    if (!('error' in outcome)) throw new Error(`expected a rejection, got ${JSON.stringify(outcome.value)}`);
    return outcome.error as Error & { code?: string; constraint?: string };
  };

  describe('binds parameters instead of formatting them into the SQL', () => {
    it('returns a text full of quotes, backslashes, placeholders, unicode and injected SQL exactly as given', async () => {
      const hostile = [
        `it's "quoted" ''twice'' \\ back\\slash \\' \\\\`,
        "$1 $2 ? ?? :name :: $$dollar$$ $tag$ E'\\n'",
        "'; drop table users; --",
        "x'); delete from users where ('1'='1",
        'ünïcødé 🌸 鬼 نص e\u0301 \u200b\t\r\n end',
      ].join('\n');
      const [row] = await executeBound<{ v: string; w: string }>(
        data(),
        'select $1::text as v, $2::text as w',
        [hostile, "'; drop table users; --"],
      );
      expect(row).toEqual({ v: hostile, w: "'; drop table users; --" });
    });

    it('matches an injection string as a plain value and leaves the tables alone', async () => {
      const id = userId();
      await insertUser(data(), id);
      const rows = await executeBound(data(), 'select id from users where username = $1', [
        "x' or '1'='1'; drop table users; --",
      ]);
      expect(rows).toEqual([]);
      const [count] = await queryRows<{ n: number }>(
        db(),
        'select count(*)::int as n from users where id = ?',
        [id],
      );
      expect(count).toEqual({ n: 1 });
    });

    it('binds a JS array as a uuid[] and returns it as an array', async () => {
      const ids = [newId(), newId(), newId()];
      const [row] = await executeBound<{ v: string[]; n: number }>(
        data(),
        'select $1::uuid[] as v, cardinality($1::uuid[]) as n',
        [ids],
      );
      expect(row).toEqual({ v: ids, n: 3 });
    });

    it('binds a Date as a timestamptz and returns a Date at the same instant', async () => {
      const at = new Date('2024-02-29T23:59:58.123Z');
      const [row] = await executeBound<{ v: unknown; epoch_ms: string | number }>(
        data(),
        'select $1::timestamptz as v, (extract(epoch from $1::timestamptz) * 1000)::int8::text as epoch_ms',
        [at],
      );
      // The server read the instant right, whatever the driver makes of the result.
      expect(Number(row?.epoch_ms)).toBe(at.getTime());
      expect(row?.v).toBeInstanceOf(Date);
      expect(row?.v).toEqual(at);
    });

    it('parses timestamps as Dates and arrays, numbers, booleans and json as JS values, in or out of a transaction', async () => {
      const at = new Date('2024-01-02T03:04:05.678Z');
      const text = `select $1::timestamptz as at, array[$1::timestamptz, null] as ats, 7::int4 as i, true as b,
        '{"a": [1, "x"]}'::jsonb as j, null::text as nothing, array['a', null]::text[] as texts`;
      const expected = {
        at,
        ats: [at, null],
        i: 7,
        b: true,
        j: { a: [1, 'x'] },
        nothing: null,
        texts: ['a', null],
      };
      const [outside] = await executeBound<Record<string, unknown>>(data(), text, [at]);
      expect(outside).toEqual(expected);
      expect(outside?.at).toBeInstanceOf(Date);
      const [inside] = await transaction(data(), (tx) =>
        executeBound<Record<string, unknown>>(tx, text, [at]),
      );
      expect(inside).toEqual(expected);
      expect(inside?.at).toBeInstanceOf(Date);
    });

    it('binds arrays with null elements and arrays of Dates, as the batch statements use them', async () => {
      const ids = [newId(), newId()];
      const messages = ['a "quoted", {braced} \\ message', null];
      const times = [new Date('2024-01-02T03:04:05.678Z'), new Date('1999-12-31T23:59:59.999Z')];
      const rows = await executeBound<{ id: string; message: string | null; at_ms: string }>(
        data(),
        `select v.id, v.message, (extract(epoch from v.at) * 1000)::int8::text as at_ms
         from unnest($1::uuid[], $2::text[], $3::timestamptz[]) with ordinality as v(id, message, at, i) order by v.i`,
        [ids, messages, times],
      );
      expect(rows).toEqual([
        { id: ids[0], message: messages[0], at_ms: String(times[0]?.getTime()) },
        { id: ids[1], message: null, at_ms: String(times[1]?.getTime()) },
      ]);
    });

    it('binds bytes and lists of bytes (with nulls, empty, or none) and returns every byte as given', async () => {
      const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const large = randomBytes(300_000);
      const statement = `select $1::bytea as one, $2::bytea[] as list, cardinality($3::bytea[]) as empty,
                                (select array_agg(length(b) order by i) from unnest($2::bytea[]) with ordinality as u(b, i)) as lengths`;
      for (const list of [[every, null, Buffer.alloc(0), large], [null], [large]]) {
        const [row] = await executeBound<{
          one: Uint8Array;
          list: (Uint8Array | null)[];
          empty: number;
          lengths: (number | null)[];
        }>(data(), statement, [every, list, []]);
        expect(Buffer.from(row?.one ?? [])).toEqual(every);
        expect(row?.list.map((item) => (item === null ? null : Buffer.from(item)))).toEqual(list);
        expect(row?.lengths).toEqual(list.map((item) => item?.length ?? null));
        expect(row?.empty).toBe(0);
      }
    });

    it('returns jsonb as objects and a cast enum array as an array of strings', async () => {
      const id = userId();
      await insertUser(data(), id);
      const document = { base_body: 'b', slots: { hat: "it's" }, n: 1.5, list: [true, null] };
      const [saved] = await executeBound<{ document: unknown }>(
        data(),
        'insert into avatar_loadouts (user_id, document) values ($1, $2::jsonb) returning document',
        [id, JSON.stringify(document)],
      );
      expect(saved).toEqual({ document });
      const [user] = await executeBound<{ roles: unknown }>(
        data(),
        'select roles::text[] as roles from users where id = $1',
        [id],
      );
      expect(user).toEqual({ roles: ['user'] });
    });
  });

  describe('runs the same text many times', () => {
    it('keeps answering with fresh results each time', async () => {
      const ids: string[] = [];
      const count = 'select count(*)::int as n from session_revocations where session_id = any($1::uuid[])';
      for (let i = 1; i <= 12; i++) {
        const id = revocationId();
        ids.push(id);
        await executeBound(data(), insertRevocation, [id]);
        expect(await executeBound(data(), count, [ids])).toEqual([{ n: i }]);
      }
      // Many at once, so several pooled connections (on Postgres) run the text too.
      const answers = await Promise.all(
        ids.map((_, i) => executeBound(data(), count, [ids.slice(0, i + 1)])),
      );
      expect(answers).toEqual(ids.map((_, i) => [{ n: i + 1 }]));
    });

    // Both databases prepare each text under a name: Postgres once per pooled connection, the
    // embedded database once in its one session (through PGlite's protocol API).
    it('prepares the text once per connection under a single atrium_ name', async () => {
      const text = `select $1::int * 2 as doubled /* ${randomBytes(4).toString('hex')} */`;
      for (let i = 0; i < 10; i++) {
        expect(await executeBound(single.data, text, [i])).toEqual([{ doubled: i * 2 }]);
      }
      // Runs on the same (only) pooled connection, so it sees that session's statements.
      const prepared = await executeBound<{ name: string; n: string }>(
        single.data,
        `select name, count(*) over ()::text as n from pg_prepared_statements where statement = $1`,
        [text],
      );
      expect(prepared).toHaveLength(1);
      expect(prepared[0]?.name).toMatch(/^atrium_\d+$/);
      // The statement kept its placeholder: the value was never part of the text.
      const [parameters] = await executeBound<{ types: string[] }>(
        single.data,
        'select parameter_types::text[] as types from pg_prepared_statements where statement = $1',
        [text],
      );
      expect(parameters).toEqual({ types: ['integer'] });

      // The same holds for a connection of the shared pool, seen from inside one transaction.
      await transaction(data(), async (tx) => {
        for (let i = 0; i < 5; i++) expect(await executeBound(tx, text, [i])).toEqual([{ doubled: i * 2 }]);
        const names = await executeBound<{ name: string }>(
          tx,
          'select name from pg_prepared_statements where statement = $1',
          [text],
        );
        expect(names).toHaveLength(1);
        expect(names[0]?.name).toMatch(/^atrium_\d+$/);
        const [unique] = await executeBound<{ same: boolean }>(
          tx,
          `select count(*) = count(distinct statement) as same from pg_prepared_statements where name like 'atrium\\_%'`,
          [],
        );
        expect(unique).toEqual({ same: true });
      });
    });

    // The bound is the same on the embedded database; a second ORM on one database is only
    // possible on Postgres (PGlite's files belong to one process), hence Postgres only.
    it.skipIf(!onPostgres)(
      'on Postgres, names at most 500 texts and runs any further text unnamed',
      async () => {
        // An ORM of its own, so its table of names starts empty whatever ran before.
        const fresh = await openDatabase(configFrom({ DATABASE_URL: testDb.url, DATABASE_POOL_SIZE: 1 }));
        try {
          const texts = Array.from({ length: 505 }, (_, i) => `select $1::int + ${i} as v`);
          for (const [i, text] of texts.entries()) {
            expect(await executeBound(fresh.data, text, [1])).toEqual([{ v: i + 1 }]);
          }
          // Run again: the named ones reuse their statement, the unnamed ones are parsed anew.
          for (const [i, text] of texts.entries()) {
            expect(await executeBound(fresh.data, text, [2])).toEqual([{ v: i + 2 }]);
          }
          const [named] = await executeBound<{ n: number; extra: number }>(
            fresh.data,
            `select count(*)::int as n, count(*) filter (where statement = any($1::text[]))::int as extra
             from pg_prepared_statements where name like 'atrium\\_%'`,
            [texts.slice(500)],
          );
          expect(named).toEqual({ n: 500, extra: 0 });
        } finally {
          await fresh.close();
        }
      },
    );
  });

  /**
   * A transaction of `work` held open until `finish` (with an error: rolled back): what the test
   * runs meanwhile starts outside the transaction's async context, as another request would.
   */
  const heldOpen = async (work: (tx: DataAccess) => Promise<unknown>) => {
    let opened: () => void = () => undefined;
    let finish: (error?: Error) => void = () => undefined;
    const open = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const finished = new Promise<void>((resolve, reject) => {
      finish = (error) => (error ? reject(error) : resolve());
    });
    const done = transaction(data(), async (tx) => {
      await work(tx);
      opened();
      await finished;
    });
    await Promise.race([open, done]);
    return { finish, done };
  };

  describe('inside a transaction', () => {
    it("sees the transaction's own uncommitted writes through its handle", async () => {
      const revoked = revocationId();
      const viaTx = userId();
      const name = username();
      await transaction(data(), async (tx) => {
        await executeBound(tx, insertRevocation, [revoked]);
        expect(
          await executeBound(tx, 'select session_id from session_revocations where session_id = $1', [
            revoked,
          ]),
        ).toEqual([{ session_id: revoked }]);
        await insertUser(tx, viaTx, name);
        expect(await executeBound(tx, 'select username from users where id = $1', [viaTx])).toEqual([
          { username: name },
        ]);
      });
      expect(await revocationsAmong([revoked])).toEqual([revoked]);
      expect(await queryRows(db(), 'select username from users where id = ?', [viaTx])).toEqual([
        { username: name },
      ]);
    });

    it("refuses the root handle inside a transaction's work on a pool of one connection, which it would wait for forever, and the transaction rolls back", async () => {
      const viaTx = userId();
      const viaRoot = revocationId();
      await expect(
        transaction(single.data, async (tx) => {
          await insertUser(tx, viaTx);
          await executeBound(single.data, insertRevocation, [viaRoot]);
        }),
      ).rejects.toThrow(/root handle was used inside a transaction's work/);
      await expect(
        transaction(single.data, (tx) =>
          transaction(single.data, async () => executeBound(tx, 'select 1', [])),
        ),
      ).rejects.toThrow(/root handle was used inside a transaction's work/);
      expect(await queryRows(db(), 'select id from users where id = ?', [viaTx])).toEqual([]);
      expect(await revocationsAmong([viaRoot])).toEqual([]);
    });

    it.runIf(process.env.DATABASE_URL)(
      "runs the root handle inside a transaction's work on a connection of its own, outside the transaction, on a larger pool",
      async () => {
        const viaRoot = revocationId();
        await expect(
          transaction(data(), async () => {
            await executeBound(data(), insertRevocation, [viaRoot]);
            throw new Error('roll back');
          }),
        ).rejects.toThrow('roll back');
        expect(await revocationsAmong([viaRoot])).toEqual([viaRoot]);
      },
    );

    it('has its writes undone when the transaction rolls back', async () => {
      const revoked = revocationId();
      const id = userId();
      const rollback = new Error('roll back');
      await expect(
        transaction(data(), async (tx) => {
          await executeBound(tx, insertRevocation, [revoked]);
          await insertUser(tx, id);
          expect(await executeBound(tx, 'select count(*)::int as n from users where id = $1', [id])).toEqual([
            { n: 1 },
          ]);
          throw rollback;
        }),
      ).rejects.toBe(rollback);
      expect(await revocationsAmong([revoked])).toEqual([]);
      expect(await queryRows(db(), 'select id from users where id = ?', [id])).toEqual([]);
      // And the pool is fine afterwards.
      expect(await executeBound(data(), 'select 1 as one', [])).toEqual([{ one: 1 }]);
    });

    it.skipIf(!onPostgres)(
      "on Postgres, runs a statement of another call on another connection, blind to the open transaction's rows",
      async () => {
        const pending = revocationId();
        const outside = revocationId();
        const { finish, done } = await heldOpen((tx) => executeBound(tx, insertRevocation, [pending]));
        const [seen] = await executeBound<{ n: number }>(
          data(),
          `with inserted as (insert into session_revocations (session_id, revoked_at) values ($1, now()))
           select count(*)::int as n from session_revocations where session_id = $2`,
          [outside, pending],
        );
        expect(seen).toEqual({ n: 0 });
        finish();
        await done;
        expect(await revocationsAmong([pending, outside])).toEqual([pending, outside].sort());
      },
    );
  });

  // On Postgres another pooled connection answers at once (test above); the embedded database is
  // one session, which only the holder of the pool's one connection may use.
  describe.skipIf(onPostgres)('on the embedded database, next to an open transaction', () => {
    /** Whether the promise settled within `ms`. */
    const settlesWithin = async (promise: Promise<unknown>, ms: number) => {
      let settled = false;
      promise.then(
        () => {
          settled = true;
        },
        () => {
          settled = true;
        },
      );
      await sleep(ms);
      return settled;
    };

    it('waits for the transaction to commit, then sees the committed row', async () => {
      const committed = revocationId();
      const { finish, done } = await heldOpen((tx) => executeBound(tx, insertRevocation, [committed]));
      const lean = executeBound<{ n: number }>(
        data(),
        'select count(*)::int as n from session_revocations where session_id = $1',
        [committed],
      );
      expect(await settlesWithin(lean, 150)).toBe(false);
      finish();
      await done;
      expect(await lean).toEqual([{ n: 1 }]);
    });

    it('runs outside the transaction: neither sees its uncommitted row nor is rolled back with it', async () => {
      const rolledBack = revocationId();
      const leanWrite = revocationId();
      const rollback = new Error('roll back');
      const { finish, done } = await heldOpen((tx) => executeBound(tx, insertRevocation, [rolledBack]));
      // Were this run inside the open transaction, it would count the row inserted above and its
      // own insert would vanish with the rollback.
      const lean = executeBound<{ n: number }>(
        data(),
        `with inserted as (insert into session_revocations (session_id, revoked_at) values ($1, now()))
         select count(*)::int as n from session_revocations where session_id = $2`,
        [leanWrite, rolledBack],
      );
      expect(await settlesWithin(lean, 150)).toBe(false);
      finish(rollback);
      await expect(done).rejects.toBe(rollback);
      expect(await lean).toEqual([{ n: 0 }]);
      expect(await revocationsAmong([rolledBack, leanWrite])).toEqual([leanWrite]);
    });

    it('leaves no transaction open on the session after a failed statement', async () => {
      const failing = executeBound(data(), 'select 1 / 0 as boom', []);
      expect((await rejection(failing)).code).toBe('22012');
      const [state] = await queryRows<{ now_differs: boolean }>(
        db(),
        'select now() <> statement_timestamp() as now_differs',
      );
      // now() is the transaction's start: equal to the statement's when each statement is its own transaction.
      expect(state).toEqual({ now_differs: false });
    });
  });

  describe('keeps the database error for callers to map', () => {
    it('reports a foreign-key violation with SQLSTATE 23503 and answers the next statement', async () => {
      const error = await rejection(
        executeBound(single.data, 'insert into avatar_loadouts (user_id, document) values ($1, $2::jsonb)', [
          newId(),
          '{}',
        ]),
      );
      expect(error.code).toBe('23503');
      expect(error.constraint).toBe('avatar_loadouts_user_id_fkey');
      expect(await executeBound(single.data, 'select 1 as one', [])).toEqual([{ one: 1 }]);
    });

    it('reports a unique violation with SQLSTATE 23505, also for a statement that succeeded before', async () => {
      const revoked = revocationId();
      const first = single.data;
      await executeBound(first, insertRevocation, [revoked]);
      const error = await rejection(executeBound(single.data, insertRevocation, [revoked]));
      expect(error.code).toBe('23505');
      expect(error.constraint).toBe('session_revocations_pkey');
      // The same text keeps working on the same connection after failing there.
      const other = revocationId();
      await executeBound(single.data, insertRevocation, [other]);
      expect(await revocationsAmong([revoked, other])).toEqual([revoked, other].sort());

      const name = username();
      await insertUser(single.data, userId(), name);
      const folded = await rejection(insertUser(single.data, userId(), name.toUpperCase()));
      expect(folded).toMatchObject({ code: '23505', constraint: 'users_username_folded_key' });
    });

    it('reports a check violation and a malformed parameter with their SQLSTATEs', async () => {
      const check = await rejection(insertUser(single.data, userId(), 'bad name!'));
      expect(check).toMatchObject({ code: '23514', constraint: 'users_username_format' });
      const malformed = await rejection(
        executeBound(single.data, 'select id from users where id = $1', ['not-a-uuid']),
      );
      expect(malformed.code).toBe('22P02');
      // Same text, valid value, same connection.
      expect(await executeBound(single.data, 'select id from users where id = $1', [newId()])).toEqual([]);
    });

    it('rolls back a transaction whose lean statement failed, and the pool stays usable', async () => {
      const revoked = revocationId();
      const error = await rejection(
        transaction(single.data, async (tx) => {
          await executeBound(tx, insertRevocation, [revoked]);
          await executeBound(tx, insertRevocation, [revoked]);
        }),
      );
      expect(error.code).toBe('23505');
      expect(await revocationsAmong([revoked])).toEqual([]);
      expect(await executeBound(single.data, 'select 2 as two', [])).toEqual([{ two: 2 }]);
      await transaction(single.data, (tx) => executeBound(tx, insertRevocation, [revoked]));
      expect(await revocationsAmong([revoked])).toEqual([revoked]);
    });
  });
});
