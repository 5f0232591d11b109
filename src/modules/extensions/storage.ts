import { cursorKey, decodeCursor, pageFrom } from '../../platform/cursor.js';
import { type DataAccess, transaction } from '../../platform/data-access.js';
import { hasSqlState, SqlState } from '../../platform/db.js';
import { AppError } from '../../platform/errors.js';
import { ExtensionServiceError } from './service-error.js';
import {
  currentVersion,
  deleteRecord,
  findRecord,
  insertRecord,
  pageOfRecords,
  type RecordRef,
  recordsOf,
  type StoredRecord,
  updateRecordAt,
  upsertRecord,
} from './storage.repository.js';
import {
  checkLimit,
  checkName,
  checkOptions,
  checkUserId,
  checkVersion,
  jsonTextOf,
} from './storage-arguments.js';

/**
 * `ctx.storage` (docs/extensions.md, "ctx.storage"): an extension's key-value records, private to
 * it, each with a version for optimistic concurrency. A conditional write is one statement that
 * acts only at the expected version (or, for version 0, only when there is no record), so a
 * read-modify-write loop that retries on StorageConflictError loses no update under any
 * concurrency. Creating a record counts it against the extension's quota in the same transaction;
 * the count is kept by the table's triggers, so the check reads one row.
 */

/** A write or delete named a version the record is not at; nothing was written. */
export class StorageConflictError extends Error {
  override name = 'StorageConflictError';
  readonly code = 'STORAGE_CONFLICT';
  constructor(
    /** The record's version when the write was refused; null when there is no record. */
    readonly current_version: number | null,
  ) {
    super(
      current_version === null
        ? 'The record does not exist, so the version given is stale; nothing was written.'
        : `The record is at version ${current_version}, not the version given; nothing was written.`,
    );
  }
}

export interface StorageRecord {
  value: unknown;
  version: number;
}

export interface StorageItem {
  key: string;
  value: unknown;
  version: number;
  user_id: string | null;
  /** ISO-8601 UTC. */
  updated_at: string;
}

export interface StoragePage {
  items: StorageItem[];
  /** Passed as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
}

export interface StorageWriteOptions {
  /** Omitted or null: the extension's global record. */
  user_id?: string | null;
  /** Act only if the record is at this version; 0: only if there is no record. */
  version?: number;
}

export interface StorageListOptions {
  user_id?: string | null;
  /** 1-100, 50 when omitted. */
  limit?: number;
  /** The previous page's `next_cursor`. */
  cursor?: string | null;
}

export interface ExtensionStorage {
  get(collection: string, key: string, user_id?: string | null): Promise<StorageRecord | null>;
  put(
    collection: string,
    key: string,
    value: unknown,
    options?: StorageWriteOptions,
  ): Promise<{ version: number }>;
  list(collection: string, options?: StorageListOptions): Promise<StoragePage>;
  /**
   * true when a record was deleted, false when there was none. With `version: n` it deletes only
   * a record at n (no record is a conflict with current_version null); `version: 0` is satisfied
   * by no record (false) and refuses one that exists.
   */
  delete(collection: string, key: string, options?: StorageWriteOptions): Promise<boolean>;
}

/** A page cursor: the last key of the page. */
const isPageKey = cursorKey((value: unknown): value is string => {
  try {
    return checkName(value, 'key') === value;
  } catch {
    return false;
  }
});

/**
 * The storage of `extension`. `guard` runs first in every method (it throws once the call's
 * deadline has passed, so nothing is done then); `limits.maxRecords` is the extension's quota.
 */
export function extensionStorage(
  data: DataAccess,
  extension: string,
  guard: () => void,
  limits: { maxRecords: number },
): ExtensionStorage {
  const refOf = (collection: unknown, key: unknown, userId: unknown): RecordRef => ({
    extension,
    collection: checkName(collection, 'collection'),
    key: checkName(key, 'key'),
    userId: checkUserId(userId),
  });

  /** Creates the record (only if absent, or else writes over it) and counts it against the quota. */
  const create = (ref: RecordRef, valueJson: string, onlyIfAbsent: boolean): Promise<number> =>
    transaction(data, async (tx) => {
      let version = 1;
      if (onlyIfAbsent) {
        if (!(await insertRecord(tx, ref, valueJson)))
          throw new StorageConflictError(await currentVersion(tx, ref));
      } else {
        version = await upsertRecord(tx, ref, valueJson);
      }
      if (version === 1 && (await recordsOf(tx, extension)) > limits.maxRecords) {
        throw new ExtensionServiceError(
          'QUOTA_EXCEEDED',
          `The extension holds ${limits.maxRecords} records, as many as it may; nothing was written.`,
        );
      }
      return version;
    }).catch((error: unknown) => {
      if (hasSqlState(error, SqlState.FOREIGN_KEY_VIOLATION)) {
        throw new ExtensionServiceError('NOT_FOUND', 'No user has this user_id; nothing was written.');
      }
      throw error;
    });

  return {
    async get(collection, key, userId) {
      guard();
      return findRecord(data, refOf(collection, key, userId));
    },

    async put(collection, key, value, options) {
      guard();
      const given = checkOptions(options);
      const ref = refOf(collection, key, given.user_id);
      const version = checkVersion(given.version);
      const valueJson = jsonTextOf(value);
      if (version === undefined || version === 0)
        return { version: await create(ref, valueJson, version === 0) };
      const next = await updateRecordAt(data, ref, valueJson, version);
      if (next === null) throw new StorageConflictError(await currentVersion(data, ref));
      return { version: next };
    },

    async list(collection, options) {
      guard();
      const given = checkOptions(options);
      const page = {
        extension,
        collection: checkName(collection, 'collection'),
        userId: checkUserId(given.user_id),
        limit: checkLimit(given.limit),
      };
      const [afterKey = ''] = afterKeyOf(given.cursor) ?? [];
      const rows = await pageOfRecords(data, { ...page, afterKey, limit: page.limit + 1 });
      return pageFrom(rows, page.limit, itemOf, (row) => [row.key]);
    },

    async delete(collection, key, options) {
      guard();
      const given = checkOptions(options);
      const ref = refOf(collection, key, given.user_id);
      const version = checkVersion(given.version);
      if (version === 0) {
        const current = await currentVersion(data, ref);
        if (current !== null) throw new StorageConflictError(current);
        return false;
      }
      if (await deleteRecord(data, ref, version ?? null)) return true;
      if (version === undefined) return false;
      throw new StorageConflictError(await currentVersion(data, ref));
    },
  };
}

/** The key a cursor names; undefined for the first page (no cursor, or null). */
function afterKeyOf(cursor: unknown): readonly [string] | undefined {
  if (cursor === undefined || cursor === null) return undefined;
  try {
    if (typeof cursor === 'string') return decodeCursor(cursor, isPageKey);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
  }
  throw new ExtensionServiceError(
    'VALIDATION_FAILED',
    'cursor must be a next_cursor this list gave out, or omitted.',
  );
}

const itemOf = (row: StoredRecord): StorageItem => ({
  key: row.key,
  value: row.value,
  version: row.version,
  user_id: row.user_id,
  updated_at: row.updated_at.toISOString(),
});
