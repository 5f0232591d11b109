import { describe, expect, it } from 'vitest';
import { ExtensionServiceError } from '../../src/modules/extensions/service-error.js';
import {
  type ExtensionStorage,
  extensionStorage,
  StorageConflictError,
} from '../../src/modules/extensions/storage.js';
import { MAX_VALUE_BYTES, MAX_VALUE_DEPTH } from '../../src/modules/extensions/storage-arguments.js';
import { queryRows } from '../helpers/database.js';
import { failureOf } from '../helpers/rejections.js';
import { useServices } from '../helpers/services.js';

/**
 * `ctx.storage` (docs/extensions.md, "ctx.storage") on the real database of either backend: the
 * storage an extension's ctx gets, called as an extension calls it. Each test uses extensions of
 * its own name, so the records of one test never meet another's.
 */
describe('extension storage', () => {
  const services = useServices();
  let extensions = 0;
  const newExtensionName = () => `ext_${++extensions}`;
  /** The storage of a new extension (or of `name`), with no deadline and a quota of `maxRecords`. */
  const storageOf = (name = newExtensionName(), maxRecords = 1000): ExtensionStorage =>
    extensionStorage(services().db.data, name, () => {}, { maxRecords });

  /** Each row the extension holds, and the count its quota is checked against. */
  const stateOf = async (extension: string) => ({
    rows: await queryRows<{
      collection: string;
      key: string;
      user_id: string | null;
      version: string | number;
    }>(
      services().db,
      'select collection, key, user_id, version from extension_storage where extension = ? order by collection, key, user_id',
      [extension],
    ).then((rows) => rows.map((row) => ({ ...row, version: Number(row.version) }))),
    counted:
      (
        await queryRows<{ records: number }>(
          services().db,
          'select records from extension_storage_usage where extension = ?',
          [extension],
        )
      )[0]?.records ?? 0,
  });
  const failure = (promise: Promise<unknown>) =>
    failureOf<{ code?: string; current_version?: number | null }>(promise);

  it('creates a record at version 1, gives back what was put, and raises the version by one on every put', async () => {
    const storage = storageOf();
    expect(await storage.put('scores', 'alice', { best: 10 })).toEqual({ version: 1 });
    expect(await storage.get('scores', 'alice')).toEqual({ value: { best: 10 }, version: 1 });
    expect(await storage.put('scores', 'alice', { best: 12 })).toEqual({ version: 2 });
    expect(await storage.put('scores', 'alice', { best: 15 }, {})).toEqual({ version: 3 });
    expect(await storage.get('scores', 'alice', null)).toEqual({ value: { best: 15 }, version: 3 });
    expect(await storage.get('scores', 'bob')).toBeNull();
    expect(await storage.get('other', 'alice')).toBeNull();
  });

  it('stores a value verbatim: key order, a __proto__ key kept as an own key, U+0000 and unpaired surrogates in strings and keys', async () => {
    const storage = storageOf();
    const value = JSON.parse(
      '{"zebra":1,"__proto__":{"polluted":true},"apple":[3,2,1],"nul\\u0000key":"a\\u0000b","lone":"\\ud800x\\udc00","deep":{"b":null,"a":false},"10":1.5e-7}',
    );
    await storage.put('c', 'k', value);
    const stored = (await storage.get('c', 'k'))?.value as Record<string, unknown>;
    expect(JSON.stringify(stored)).toBe(JSON.stringify(value));
    expect(Object.keys(stored)).toEqual([
      '10',
      'zebra',
      '__proto__',
      'apple',
      'nul\u0000key',
      'lone',
      'deep',
    ]);
    expect(Object.hasOwn(stored, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect((stored as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(stored.lone).toBe('\ud800x\udc00');
    const [item] = (await storage.list('c')).items;
    expect(JSON.stringify(item?.value)).toBe(JSON.stringify(value));
    expect(Object.hasOwn(item?.value as object, '__proto__')).toBe(true);
  });

  it('stores every kind of JSON value, scalars included', async () => {
    const storage = storageOf();
    const values = [null, true, false, 0, -1.5, 1e300, '', 'text', [], {}, [null, [{}]], Object.create(null)];
    for (const [i, value] of values.entries()) {
      await storage.put('c', `k${i}`, value);
      expect((await storage.get('c', `k${i}`))?.value).toEqual(value);
    }
  });

  it(`takes a value of ${MAX_VALUE_BYTES} bytes as JSON and refuses one byte more with VALIDATION_FAILED`, async () => {
    const storage = storageOf();
    // Two bytes of the total are the quotes, and é is two bytes of UTF-8.
    const largest = `é${'x'.repeat(MAX_VALUE_BYTES - 4)}`;
    await storage.put('c', 'big', largest);
    expect((await storage.get('c', 'big'))?.value).toBe(largest);
    const error = await failure(storage.put('c', 'big', `${largest}x`));
    expect(error).toBeInstanceOf(ExtensionServiceError);
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(await storage.get('c', 'big')).toEqual({ value: largest, version: 1 });
  });

  it(`takes arrays and objects nested ${MAX_VALUE_DEPTH} levels deep and refuses one level more with VALIDATION_FAILED`, async () => {
    const storage = storageOf();
    const nested = (depth: number) => JSON.parse(`${'[{"a":'.repeat(depth / 2)}1${'}]'.repeat(depth / 2)}`);
    await storage.put('c', 'deep', nested(MAX_VALUE_DEPTH));
    expect((await storage.get('c', 'deep'))?.value).toEqual(nested(MAX_VALUE_DEPTH));
    const error = await failure(storage.put('c', 'deeper', [nested(MAX_VALUE_DEPTH)]));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(await storage.get('c', 'deeper')).toBeNull();
  });

  it('takes collections and keys of 1 to 128 characters, counted as code points', async () => {
    const storage = storageOf();
    const emoji = '😀'.repeat(128);
    await storage.put('c'.repeat(128), emoji, 1);
    await storage.put('x', 'y', 2);
    expect(await storage.get('c'.repeat(128), emoji)).toEqual({ value: 1, version: 1 });
    expect((await storage.list('c'.repeat(128))).items.map((item) => item.key)).toEqual([emoji]);
  });

  it('refuses every bad argument with VALIDATION_FAILED and writes nothing', async () => {
    const name = newExtensionName();
    const storage = storageOf(name);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    class Point {
      x = 1;
    }
    const badText = [
      '',
      'c'.repeat(129),
      '😀'.repeat(129),
      'a\u0000b',
      'a\ud800',
      '\udc00',
      42,
      null,
      undefined,
      ['k'],
    ];
    const badUserIds = ['not-a-uuid', '', 42, {}, '00000000-0000-0000-0000-00000000000g'];
    const badVersions = [-1, 1.5, '1', null, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53];
    const badOptions = [null, 'x', 1, []];
    const badValues = [
      undefined,
      () => 1,
      Symbol('s'),
      10n,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      new Date(0),
      new Map(),
      new Point(),
      cyclic,
      { a: undefined },
      [1, undefined],
      // biome-ignore lint/suspicious/noSparseArray: a hole is what is refused here
      [, 1],
      { toJSON: () => 1 },
      Object.assign([1], { toJSON: () => 2 }),
      { nested: [{ fn: () => 1 }] },
    ];
    const badLimits = [0, 101, 1.5, '10', null];
    const forged = (key: unknown) => Buffer.from(JSON.stringify(key)).toString('base64url');
    const badCursors = ['garbage', 123, {}, forged(['']), forged([1]), forged('k'), forged(['k', 'l'])];

    const calls: [string, () => Promise<unknown>][] = [
      ...badText.flatMap((text): [string, () => Promise<unknown>][] => [
        [`get collection ${String(text)}`, () => storage.get(text as string, 'k')],
        [`get key ${String(text)}`, () => storage.get('c', text as string)],
        [`put collection ${String(text)}`, () => storage.put(text as string, 'k', 1)],
        [`put key ${String(text)}`, () => storage.put('c', text as string, 1)],
        [`list collection ${String(text)}`, () => storage.list(text as string)],
        [`delete collection ${String(text)}`, () => storage.delete(text as string, 'k')],
        [`delete key ${String(text)}`, () => storage.delete('c', text as string)],
      ]),
      ...badUserIds.flatMap((userId): [string, () => Promise<unknown>][] => [
        [`get user_id ${String(userId)}`, () => storage.get('c', 'k', userId as string)],
        [`put user_id ${String(userId)}`, () => storage.put('c', 'k', 1, { user_id: userId as string })],
        [`list user_id ${String(userId)}`, () => storage.list('c', { user_id: userId as string })],
        [`delete user_id ${String(userId)}`, () => storage.delete('c', 'k', { user_id: userId as string })],
      ]),
      ...badVersions.flatMap((version): [string, () => Promise<unknown>][] => [
        [`put version ${String(version)}`, () => storage.put('c', 'k', 1, { version: version as number })],
        [`delete version ${String(version)}`, () => storage.delete('c', 'k', { version: version as number })],
      ]),
      ...badOptions.flatMap((options): [string, () => Promise<unknown>][] => [
        [`put options ${String(options)}`, () => storage.put('c', 'k', 1, options as object)],
        [`list options ${String(options)}`, () => storage.list('c', options as object)],
        [`delete options ${String(options)}`, () => storage.delete('c', 'k', options as object)],
      ]),
      ...badValues.map((value, i): [string, () => Promise<unknown>] => [
        `put value #${i}`,
        () => storage.put('c', 'k', value),
      ]),
      ...badLimits.map((limit): [string, () => Promise<unknown>] => [
        `list limit ${String(limit)}`,
        () => storage.list('c', { limit: limit as number }),
      ]),
      ...badCursors.map((cursor): [string, () => Promise<unknown>] => [
        `list cursor ${String(cursor)}`,
        () => storage.list('c', { cursor: cursor as string }),
      ]),
    ];
    for (const [label, call] of calls) {
      const error = await failure(call());
      expect({ label, error: error instanceof ExtensionServiceError, code: error.code }).toEqual({
        label,
        error: true,
        code: 'VALIDATION_FAILED',
      });
    }
    expect(await stateOf(name)).toEqual({ rows: [], counted: 0 });
  });

  it('writes with version n only when the record is at n, and a mismatch throws StorageConflictError with the current version and writes nothing', async () => {
    const storage = storageOf();
    await storage.put('c', 'k', 'one');
    await storage.put('c', 'k', 'two');
    expect(await storage.put('c', 'k', 'three', { version: 2 })).toEqual({ version: 3 });
    const stale = await failure(storage.put('c', 'k', 'stale', { version: 2 }));
    expect(stale).toBeInstanceOf(StorageConflictError);
    expect(stale).toMatchObject({
      name: 'StorageConflictError',
      code: 'STORAGE_CONFLICT',
      current_version: 3,
    });
    expect(await failure(storage.put('c', 'k', 'ahead', { version: 4 }))).toMatchObject({
      current_version: 3,
    });
    expect(await storage.get('c', 'k')).toEqual({ value: 'three', version: 3 });
    const absent = await failure(storage.put('c', 'absent', 'x', { version: 1 }));
    expect(absent).toBeInstanceOf(StorageConflictError);
    expect(absent).toMatchObject({ current_version: null });
    expect(await storage.get('c', 'absent')).toBeNull();
  });

  it('creates with version 0 only when there is no record', async () => {
    const name = newExtensionName();
    const storage = storageOf(name);
    expect(await storage.put('c', 'k', 'first', { version: 0 })).toEqual({ version: 1 });
    const taken = await failure(storage.put('c', 'k', 'second', { version: 0 }));
    expect(taken).toBeInstanceOf(StorageConflictError);
    expect(taken).toMatchObject({ current_version: 1 });
    expect(await storage.get('c', 'k')).toEqual({ value: 'first', version: 1 });
    expect((await stateOf(name)).counted).toBe(1);
  });

  it('deletes a record: true when one was deleted, false when there was none', async () => {
    const storage = storageOf();
    await storage.put('c', 'k', 1);
    expect(await storage.delete('c', 'k')).toBe(true);
    expect(await storage.get('c', 'k')).toBeNull();
    expect(await storage.delete('c', 'k')).toBe(false);
    expect(await storage.delete('c', 'never', {})).toBe(false);
    // A record made again starts over at version 1.
    expect(await storage.put('c', 'k', 2)).toEqual({ version: 1 });
  });

  it('deletes with version n only a record at n; version 0 is satisfied by no record; a mismatch deletes nothing', async () => {
    const storage = storageOf();
    await storage.put('c', 'k', 1);
    await storage.put('c', 'k', 2);
    const stale = await failure(storage.delete('c', 'k', { version: 1 }));
    expect(stale).toBeInstanceOf(StorageConflictError);
    expect(stale).toMatchObject({ current_version: 2 });
    const present = await failure(storage.delete('c', 'k', { version: 0 }));
    expect(present).toMatchObject({ code: 'STORAGE_CONFLICT', current_version: 2 });
    expect(await storage.get('c', 'k')).toEqual({ value: 2, version: 2 });
    expect(await storage.delete('c', 'k', { version: 2 })).toBe(true);
    expect(await storage.get('c', 'k')).toBeNull();
    expect(await storage.delete('c', 'k', { version: 0 })).toBe(false);
    expect(await failure(storage.delete('c', 'k', { version: 2 }))).toMatchObject({
      code: 'STORAGE_CONFLICT',
      current_version: null,
    });
  });

  it("keeps two extensions' records apart: neither reads, lists, overwrites nor deletes the other's", async () => {
    const [first, second] = [newExtensionName(), newExtensionName()];
    const a = storageOf(first);
    const b = storageOf(second);
    const { user } = await services().createUser();
    await a.put('c', 'k', 'a');
    await a.put('c', 'k', 'a-user', { user_id: user.id });
    expect(await b.get('c', 'k')).toBeNull();
    expect(await b.get('c', 'k', user.id)).toBeNull();
    expect((await b.list('c')).items).toEqual([]);
    expect((await b.list('c', { user_id: user.id })).items).toEqual([]);
    expect(await b.delete('c', 'k')).toBe(false);
    expect(await b.put('c', 'k', 'b', { version: 0 })).toEqual({ version: 1 });
    expect(await b.get('c', 'k')).toEqual({ value: 'b', version: 1 });
    expect(await a.get('c', 'k')).toEqual({ value: 'a', version: 1 });
    expect(await a.get('c', 'k', user.id)).toEqual({ value: 'a-user', version: 1 });
    expect((await stateOf(first)).counted).toBe(2);
    expect((await stateOf(second)).counted).toBe(1);
  });

  it("keeps a key's global record and each user's record apart", async () => {
    const storage = storageOf();
    const [alice, bob] = [(await services().createUser()).user, (await services().createUser()).user];
    await storage.put('c', 'k', 'global');
    await storage.put('c', 'k', 'alice', { user_id: alice.id });
    await storage.put('c', 'k', 'alice again', { user_id: alice.id.toUpperCase() });
    expect(await storage.get('c', 'k')).toEqual({ value: 'global', version: 1 });
    expect(await storage.get('c', 'k', alice.id)).toEqual({ value: 'alice again', version: 2 });
    expect(await storage.get('c', 'k', bob.id)).toBeNull();
    const listed = async (userId?: string) =>
      (await storage.list('c', { user_id: userId })).items.map(({ key, value, user_id }) => ({
        key,
        value,
        user_id,
      }));
    expect(await listed()).toEqual([{ key: 'k', value: 'global', user_id: null }]);
    expect(await listed(alice.id)).toEqual([{ key: 'k', value: 'alice again', user_id: alice.id }]);
    expect(await listed(bob.id)).toEqual([]);
    expect(await storage.delete('c', 'k', { user_id: alice.id })).toBe(true);
    expect(await storage.get('c', 'k')).toEqual({ value: 'global', version: 1 });
  });

  it("deletes a user's records with the account, keeping the global records and other users' ones, and frees their quota", async () => {
    const name = newExtensionName();
    const other = newExtensionName();
    const storage = storageOf(name, 3);
    const { call, ctxFor, createUser } = services();
    const alice = await createUser();
    const bob = await createUser();
    await storage.put('c', 'k', 'global');
    await storage.put('c', 'k', 'alice', { user_id: alice.user.id });
    await storage.put('d', 'k', 'bob', { user_id: bob.user.id });
    await storageOf(other).put('c', 'k', 'alice elsewhere', { user_id: alice.user.id });
    expect(await failure(storage.put('c', 'more', 1))).toMatchObject({ code: 'QUOTA_EXCEEDED' });

    await call('users.deleteMe', ctxFor(alice.user), { password: alice.password });
    expect(await stateOf(name)).toEqual({
      rows: [
        { collection: 'c', key: 'k', user_id: null, version: 1 },
        { collection: 'd', key: 'k', user_id: bob.user.id, version: 1 },
      ],
      counted: 2,
    });
    expect(await stateOf(other)).toEqual({ rows: [], counted: 0 });
    expect(await storage.get('c', 'k', alice.user.id)).toBeNull();
    expect(await storage.put('c', 'more', 1)).toEqual({ version: 1 });
  });

  it('refuses a record for a user id no account has with NOT_FOUND and writes nothing', async () => {
    const name = newExtensionName();
    const storage = storageOf(name);
    const nobody = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    expect(await failure(storage.put('c', 'k', 1, { user_id: nobody }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(storage.put('c', 'k', 1, { user_id: nobody, version: 0 }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(await storage.get('c', 'k', nobody)).toBeNull();
    expect(await storage.delete('c', 'k', { user_id: nobody })).toBe(false);
    expect(await stateOf(name)).toEqual({ rows: [], counted: 0 });
  });

  it('lists a collection in code point order of the keys, page by page with the opaque cursor, 50 to a page unless told', async () => {
    const storage = storageOf();
    const { user } = await services().createUser();
    // Code point order: 'B' < 'a' < 'aa' < 'é' < U+FF21 < U+1F600, which UTF-16 order would put before U+FF21.
    const keys = ['😀', 'aa', 'Ａ', 'B', 'é', 'a'];
    for (const key of keys) await storage.put('c', key, { key });
    await storage.put('c', 'a', { key: 'a', again: true });
    await storage.put('other', 'a', 'another collection');
    await storage.put('c', 'a', 'a user', { user_id: user.id });

    const first = await storage.list('c', { limit: 4 });
    expect(first.items.map((item) => item.key)).toEqual(['B', 'a', 'aa', 'é']);
    expect(first.items[1]).toEqual({
      key: 'a',
      value: { key: 'a', again: true },
      version: 2,
      user_id: null,
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await storage.list('c', { limit: 4, cursor: first.next_cursor });
    expect(second.items.map((item) => item.key)).toEqual(['Ａ', '😀']);
    expect(second.next_cursor).toBeNull();
    // Exactly a page full: the last page is known by the next_cursor being null.
    const exact = await storage.list('c', { limit: 6, cursor: null });
    expect(exact.items).toHaveLength(6);
    expect(exact.next_cursor).toBeNull();

    const many = storageOf();
    for (let i = 0; i < 101; i++) await many.put('c', `k${String(i).padStart(3, '0')}`, i);
    const defaultPage = await many.list('c');
    expect(defaultPage.items.map((item) => item.value)).toEqual([...Array(50).keys()]);
    const rest = await many.list('c', { limit: 100, cursor: defaultPage.next_cursor });
    expect(rest.items.map((item) => item.value)).toEqual([...Array(51).keys()].map((i) => i + 50));
    expect(rest.next_cursor).toBeNull();
    expect((await many.list('empty')).items).toEqual([]);
  });

  it("refuses a record beyond the extension's quota with QUOTA_EXCEEDED and writes nothing, while writes to its records go on", async () => {
    const name = newExtensionName();
    const storage = storageOf(name, 3);
    const { user } = await services().createUser();
    await storage.put('a', 'k', 1);
    await storage.put('b', 'k', 1, { version: 0 });
    await storage.put('a', 'k', 1, { user_id: user.id });
    // One after another: a put made before the previous one was awaited could reject unobserved.
    for (const refused of [
      () => storage.put('c', 'k', 1),
      () => storage.put('c', 'k', 1, { version: 0 }),
      () => storage.put('a', 'k2', 1, { user_id: user.id }),
    ]) {
      const error = await failure(refused());
      expect(error).toBeInstanceOf(ExtensionServiceError);
      expect(error.code).toBe('QUOTA_EXCEEDED');
    }
    expect((await stateOf(name)).rows).toHaveLength(3);
    expect(await storage.put('a', 'k', 2)).toEqual({ version: 2 });
    expect(await storage.put('a', 'k', 3, { version: 2 })).toEqual({ version: 3 });
    // Another extension has a quota of its own.
    expect(await storageOf(newExtensionName(), 3).put('c', 'k', 1)).toEqual({ version: 1 });
    await storage.delete('b', 'k');
    expect(await storage.put('c', 'k', 1)).toEqual({ version: 1 });
    expect((await stateOf(name)).counted).toBe(3);
  });

  it('admits exactly the quota of records when creations race', async () => {
    const name = newExtensionName();
    const storage = storageOf(name, 5);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => storage.put('c', `k${i}`, i)),
    );
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(5);
    expect(refused.map((outcome) => (outcome.reason as { code?: string }).code)).toEqual(
      Array(7).fill('QUOTA_EXCEEDED'),
    );
    const state = await stateOf(name);
    expect(state.rows).toHaveLength(5);
    expect(state.counted).toBe(5);
  });

  it('calls the guard before anything else: once it throws, no method reads, checks or writes', async () => {
    const name = newExtensionName();
    let expired = false;
    const timeout = new ExtensionServiceError('EXTENSION_TIMEOUT', 'past the deadline');
    const storage = extensionStorage(
      services().db.data,
      name,
      () => {
        if (expired) throw timeout;
      },
      { maxRecords: 10 },
    );
    await storage.put('c', 'k', 1);
    expired = true;
    for (const call of [
      () => storage.get('c', 'k'),
      () => storage.put('c', 'k', 2),
      () => storage.put('c', 'new', 2, { version: 0 }),
      () => storage.put('', '', undefined, { version: -1 }),
      () => storage.list('c'),
      () => storage.delete('c', 'k'),
    ]) {
      expect(await failure(call())).toBe(timeout);
    }
    expect(await stateOf(name)).toEqual({
      rows: [{ collection: 'c', key: 'k', user_id: null, version: 1 }],
      counted: 1,
    });
  });

  it('loses no increment when 20 read-modify-write loops that retry on StorageConflictError race on one counter', async () => {
    const name = newExtensionName();
    const storage = storageOf(name);
    const loops = 20;
    const increments = 10;
    let conflicts = 0;
    const increment = async () => {
      for (;;) {
        const current = await storage.get('counters', 'hits');
        const count = (current?.value as { count: number } | undefined)?.count ?? 0;
        try {
          await storage.put('counters', 'hits', { count: count + 1 }, { version: current?.version ?? 0 });
          return;
        } catch (error) {
          if (!(error instanceof StorageConflictError)) throw error;
          conflicts++;
        }
      }
    };
    await Promise.all(
      Array.from({ length: loops }, async () => {
        for (let i = 0; i < increments; i++) await increment();
      }),
    );
    expect(await storage.get('counters', 'hits')).toEqual({
      value: { count: loops * increments },
      version: loops * increments,
    });
    expect(await stateOf(name)).toEqual({
      rows: [{ collection: 'counters', key: 'hits', user_id: null, version: loops * increments }],
      counted: 1,
    });
    // Twenty loops that first read an absent counter cannot all create it.
    expect(conflicts).toBeGreaterThan(0);
  });

  it('keeps the quota count equal to the records held through creates, overwrites, deletes and races', async () => {
    const name = newExtensionName();
    const storage = storageOf(name);
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        await storage.put('c', `k${i % 4}`, i);
        await storage.put('d', `k${i}`, i, { version: 0 });
        if (i % 3 === 0) await storage.delete('d', `k${i}`);
      }),
    );
    const state = await stateOf(name);
    expect(state.rows).toHaveLength(4 + 6);
    expect(state.counted).toBe(state.rows.length);
  });
});
