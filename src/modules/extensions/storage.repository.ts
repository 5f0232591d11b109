import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { namedSql } from '../../platform/named-sql.js';

/**
 * The SQL of extensions' storage (migration 0030). A record is named by its extension, collection,
 * owner and key; `owner` is the record's user or, for a global record, the nil uuid
 * (`OWNER_SQL` spells the mapping once). Values go in and out as JSON text the drivers parse;
 * versions are bigint, which node-pg hands back as text.
 */

export interface RecordRef {
  extension: string;
  collection: string;
  key: string;
  /** null: the extension's global record. */
  userId: string | null;
}

export interface StoredRecord {
  key: string;
  value: unknown;
  version: number;
  user_id: string | null;
  updated_at: Date;
}

const OWNER_SQL = (param: string) => `coalesce(${param}::uuid, '00000000-0000-0000-0000-000000000000')`;

const RECORD_WHERE = `extension = $1 and collection = $2 and owner = ${OWNER_SQL('$4')} and key = $3`;

/** The ref as the $1..$4 of RECORD_WHERE. */
const refParams = (ref: RecordRef) => [ref.extension, ref.collection, ref.key, ref.userId];

type VersionRow = { version: number | string };

const FIND_SQL = `select value, version from extension_storage where ${RECORD_WHERE}`;

export async function findRecord(
  data: DataAccess,
  ref: RecordRef,
): Promise<{ value: unknown; version: number } | null> {
  const [row] = await executeBound<{ value: unknown } & VersionRow>(data, FIND_SQL, refParams(ref));
  return row ? { value: row.value, version: Number(row.version) } : null;
}

const VERSION_SQL = `select version from extension_storage where ${RECORD_WHERE}`;

/** The record's version, null when there is none: what a refused conditional write reports. */
export async function currentVersion(data: DataAccess, ref: RecordRef): Promise<number | null> {
  const [row] = await executeBound<VersionRow>(data, VERSION_SQL, refParams(ref));
  return row ? Number(row.version) : null;
}

const UPSERT_SQL = `
  insert into extension_storage as s (extension, collection, key, user_id, value, version)
  values ($1, $2, $3, $4, $5::json, 1)
  on conflict (extension, collection, owner, key)
  do update set value = excluded.value, version = s.version + 1, updated_at = now()
  returning version`;

/** Writes the record whatever its version: its new version, 1 when the record was created. */
export async function upsertRecord(data: DataAccess, ref: RecordRef, valueJson: string): Promise<number> {
  const [row] = await executeBound<VersionRow>(data, UPSERT_SQL, [...refParams(ref), valueJson]);
  return Number(row?.version);
}

const INSERT_SQL = `
  insert into extension_storage (extension, collection, key, user_id, value, version)
  values ($1, $2, $3, $4, $5::json, 1)
  on conflict (extension, collection, owner, key) do nothing
  returning version`;

/** Creates the record when there is none: true when it did. */
export async function insertRecord(data: DataAccess, ref: RecordRef, valueJson: string): Promise<boolean> {
  return (await executeBound(data, INSERT_SQL, [...refParams(ref), valueJson])).length > 0;
}

interface UpdateParams {
  extension: string;
  collection: string;
  key: string;
  userId: string | null;
  valueJson: string;
  version: number;
}

const UPDATE_SQL = namedSql<UpdateParams>(`
  update extension_storage
  set value = :valueJson::json, version = version + 1, updated_at = now()
  where extension = :extension and collection = :collection and owner = ${OWNER_SQL(':userId')}
    and key = :key and version = :version
  returning version`);

/** Writes the record only if its version is `version`: its new version, or null when it was not. */
export async function updateRecordAt(
  data: DataAccess,
  ref: RecordRef,
  valueJson: string,
  version: number,
): Promise<number | null> {
  const [row] = await executeNamed<VersionRow, UpdateParams>(data, UPDATE_SQL, {
    ...ref,
    valueJson,
    version,
  });
  return row ? Number(row.version) : null;
}

const DELETE_SQL = `
  delete from extension_storage
  where ${RECORD_WHERE} and ($5::bigint is null or version = $5)
  returning version`;

/** Deletes the record (only at `version` when given): whether one was deleted. */
export async function deleteRecord(
  data: DataAccess,
  ref: RecordRef,
  version: number | null,
): Promise<boolean> {
  return (await executeBound(data, DELETE_SQL, [...refParams(ref), version])).length > 0;
}

const RECORDS_SQL = 'select records from extension_storage_usage where extension = $1';

/** How many records the extension holds, as the storage triggers count them (no count(*)). */
export async function recordsOf(data: DataAccess, extension: string): Promise<number> {
  const [row] = await executeBound<{ records: number }>(data, RECORDS_SQL, [extension]);
  return row?.records ?? 0;
}

interface PageParams {
  extension: string;
  collection: string;
  userId: string | null;
  /** The last key of the previous page, '' for the first page (every key sorts after it). */
  afterKey: string;
  limit: number;
}

const PAGE_SQL = namedSql<PageParams>(`
  select key, value, version, user_id, updated_at from extension_storage
  where extension = :extension and collection = :collection and owner = ${OWNER_SQL(':userId')}
    and key > :afterKey
  order by key
  limit :limit`);

/** Up to `limit` records of the collection and owner after `afterKey`, in key order. */
export async function pageOfRecords(data: DataAccess, page: PageParams): Promise<StoredRecord[]> {
  const rows = await executeNamed<Omit<StoredRecord, 'version'> & VersionRow, PageParams>(
    data,
    PAGE_SQL,
    page,
  );
  return rows.map((row) => ({ ...row, version: Number(row.version) }));
}
