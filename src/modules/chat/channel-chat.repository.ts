import { beforeTimeIdKey, timeIdKeyParams, timeKeySql } from '../../platform/cursor.js';
import type { DataAccess } from '../../platform/data-access.js';
import { executeBound, executeNamed } from '../../platform/db.js';
import { type NamedSql, namedSql } from '../../platform/named-sql.js';
import type { ChannelAccess, ChannelTarget, ColumnPart } from './chat-channel.js';

/**
 * The SQL of channel chat: the messages of worlds, rooms, groups and any other kind (the
 * `messages` table of migration 0002; each kind's migration adds its target column with its
 * foreign key and history index: 0011 worlds and rooms, 0016 a world's own, 0022 groups). A kind's
 * statements are built once, when the kind is added, from its columns and its access fragment, so
 * each kind has fixed texts to prepare.
 */

/** A message of a channel; its channel's ids are the channel's target, not read back. */
export interface ChannelMessageRow {
  id: string;
  sender_id: string | null;
  body: string;
  filtered: boolean;
  /**
   * created_at to the microsecond, as text (`timeKeySql`): the row's keyset position, and its time
   * (`timeOfKey`) without parsing a Date per row.
   */
  created_key: string;
}

/**
 * A message to store, besides its target columns (which bind under their names): its id and time
 * are taken before it waits for a statement.
 */
export interface MessageValues {
  id: string;
  sender_id: string;
  body: string;
  filtered: boolean;
  at: Date;
}

/** A store's outcome: the stored row, or the refusal of the kind's access SQL. */
export interface ChannelStoreOutcome {
  refusal: string | null;
  row: ChannelMessageRow | undefined;
}

/** The statements of one kind. */
export interface ChannelStatements {
  /** Answers the stored row; with access SQL, only when it finds no refusal. */
  insert: NamedSql<Record<string, unknown>>;
  /**
   * `insert` for several messages at once, each parameter an array with an element per message
   * (`many_` and the column's name): answers the rows it stored, each admitted by the access SQL
   * for its own sender.
   */
  insertMany: NamedSql<Record<string, unknown>>;
  /** $1 the key, $2 $3 the `before` key, $4 the limit; with access SQL, $5 the reader and the refusal. */
  page: string;
  /** $1 the key, $2 the user: the refusal alone, for a join (kinds with access SQL). */
  access: string | undefined;
  /** The columns bound by name in `insert`. */
  written: readonly string[];
  key: string;
}

const COLUMNS = `id, sender_id, body, filtered, ${timeKeySql('created_at')} as created_key`;
const BEFORE = beforeTimeIdKey('created_at', 'id');
/** Plain names of `messages` columns, as a kind may declare them; the pipeline's own are not a kind's. */
const TARGET_COLUMN = /^[a-z][a-z0-9_]*_id$/;
const OWN_COLUMNS = new Set(['conversation_id', 'sender_id']);

/** Checks a kind's declaration before any of it becomes SQL text. */
function keyOf(kind: string, columns: Readonly<Record<string, ColumnPart>>): string {
  const names = Object.keys(columns);
  const bad = names.find((name) => !TARGET_COLUMN.test(name) || OWN_COLUMNS.has(name));
  if (bad) throw new Error(`Chat channel kind ${kind}: ${bad} cannot be a target column.`);
  const keys = names.filter((name) => columns[name] === 'key');
  if (keys.length !== 1 || !keys[0])
    throw new Error(`Chat channel kind ${kind} needs exactly one key column.`);
  return keys[0];
}

/**
 * The statements of a kind. Without access SQL a send is a plain insert; with it, the insert
 * writes only when the fragment finds no refusal, and answers the refusal either way.
 */
export function channelStatements(
  kind: string,
  columns: Readonly<Record<string, ColumnPart>>,
  access: ChannelAccess | undefined,
): ChannelStatements {
  const key = keyOf(kind, columns);
  const written = Object.keys(columns).filter((name) => columns[name] !== 'null');
  const nulls = Object.keys(columns).filter((name) => columns[name] === 'null');
  const insertColumns = ['id', ...written, 'sender_id', 'body', 'filtered', 'created_at'].join(', ');
  const insertValues = [
    ':id',
    ...written.map((name) => `:${name}`),
    ':sender_id',
    ':body',
    ':filtered',
    ':at',
  ];
  // The messages of a batch, one row each, named as the single insert's values are.
  const manyColumns = ['id', ...written, 'sender_id', 'body', 'filtered', 'at'];
  const manyTypes = ['uuid', ...written.map(() => 'uuid'), 'uuid', 'text', 'boolean', 'timestamptz'];
  const many = `unnest(${manyColumns.map((name, i) => `:many_${name}::${manyTypes[i]}[]`).join(', ')})
       as m(${manyColumns.join(', ')})`;
  const manyValues = manyColumns.map((name) => `m.${name}`).join(', ');
  const channelOnly = [`${key} = $1`, ...nulls.map((name) => `${name} is null`)].join(' and ');
  const pageOf = (extra: string) => `select ${COLUMNS} from messages
     where ${channelOnly} and ${BEFORE}${extra}
     order by created_at desc, id desc
     limit $4`;
  if (!access) {
    return {
      insert: namedSql(`insert into messages (${insertColumns}) values (${insertValues.join(', ')})
         returning ${COLUMNS}`),
      insertMany: namedSql(`insert into messages (${insertColumns}) select ${manyValues} from ${many}
         returning ${COLUMNS}`),
      page: pageOf(''),
      access: undefined,
      written,
      key,
    };
  }
  return {
    // A plain insert guarded by the access SQL, as cheap as an unguarded one for the sender it
    // admits; the reason of a refusal is read by `access` only when nothing was stored. Answering
    // it from this statement (a CTE joined to the insert) cost Postgres a fifth more per message.
    insert: namedSql(`insert into messages (${insertColumns})
       select ${insertValues.join(', ')} where (${access.sql(`:${key}::uuid`, ':sender_id::uuid')}) is null
       returning ${COLUMNS}`),
    insertMany: namedSql(`insert into messages (${insertColumns})
       select ${manyValues} from ${many} where (${access.sql(`m.${key}`, 'm.sender_id')}) is null
       returning ${COLUMNS}`),
    page: `with access as (select ${access.sql('$1::uuid', '$5::uuid')} as refusal)
       select access.refusal, page.* from access
       left join lateral (${pageOf(' and access.refusal is null')}) page on true
       order by page.created_key desc, page.id desc`,
    access: `select ${access.sql('$1::uuid', '$2::uuid')} as refusal`,
    written,
    key,
  };
}

/**
 * A row of the statements: with access SQL, the refusal and the message's columns (all null when
 * there is no message); without, the message alone.
 */
type RefusalRow = { refusal?: string | null } & {
  [K in keyof ChannelMessageRow]: ChannelMessageRow[K] | null;
};

const messageOf = ({ refusal: _, ...row }: RefusalRow) =>
  row.id === null ? undefined : (row as ChannelMessageRow);

/**
 * Stores a message in the channel `target` names: the row, or the refusal of the kind's access
 * SQL, read by a second statement only when the insert stored nothing.
 */
export async function insertChannelMessage(
  data: DataAccess,
  statements: ChannelStatements,
  target: ChannelTarget,
  message: MessageValues,
): Promise<ChannelStoreOutcome> {
  const params: Record<string, unknown> = { ...message };
  for (const name of statements.written) params[name] = target[name];
  const insert = () =>
    executeNamed<ChannelMessageRow, Record<string, unknown>>(data, statements.insert, params);
  const [row] = await insert();
  if (row) return { refusal: null, row };
  const refusal = await channelRefusal(data, statements, target, message.sender_id);
  if (refusal !== null) return { refusal, row: undefined };
  // Admitted between the two statements (a join committed meanwhile): stored now, or refused again.
  const [retried] = await insert();
  return retried ? { refusal: null, row: retried } : { refusal: 'refused', row: undefined };
}

/** A message to store in the channel `target` names, as a batch takes it. */
export interface ChannelMessageInput {
  target: ChannelTarget;
  message: MessageValues;
}

/**
 * insertChannelMessage for several messages, in one statement (one round trip and one commit),
 * answering for each message in order. The statement stores every message the access SQL admits;
 * one it did not store is stored or refused alone (insertChannelMessage), so its refusal, or its
 * retry when a join committed meanwhile, is as a lone send's. A lone message takes the single
 * statement.
 */
export async function insertChannelMessages(
  data: DataAccess,
  statements: ChannelStatements,
  inputs: readonly ChannelMessageInput[],
): Promise<ChannelStoreOutcome[]> {
  const [lone] = inputs;
  if (inputs.length === 1 && lone)
    return [await insertChannelMessage(data, statements, lone.target, lone.message)];
  const params: Record<string, unknown[]> = {
    many_id: inputs.map(({ message }) => message.id),
    many_sender_id: inputs.map(({ message }) => message.sender_id),
    many_body: inputs.map(({ message }) => message.body),
    many_filtered: inputs.map(({ message }) => message.filtered),
    many_at: inputs.map(({ message }) => message.at),
  };
  for (const name of statements.written) params[`many_${name}`] = inputs.map(({ target }) => target[name]);
  const rows = await executeNamed<ChannelMessageRow, Record<string, unknown>>(
    data,
    statements.insertMany,
    params,
  );
  const stored = new Map(rows.map((row) => [row.id, row]));
  const outcomes: ChannelStoreOutcome[] = [];
  for (const { target, message } of inputs) {
    const row = stored.get(message.id);
    outcomes.push(
      row ? { refusal: null, row } : await insertChannelMessage(data, statements, target, message),
    );
  }
  return outcomes;
}

/**
 * A page of the channel's messages, newest first, after `before` in that order, from its key
 * column's history index; with the refusal of the kind's access SQL for `readerId`.
 */
export async function channelMessagesOf(
  data: DataAccess,
  statements: ChannelStatements,
  target: ChannelTarget,
  readerId: string,
  page: { before: readonly [string, string] | undefined; limit: number },
): Promise<{ refusal: string | null; rows: ChannelMessageRow[] }> {
  const params = [target[statements.key], ...timeIdKeyParams(page.before), page.limit];
  const rows = await executeBound<RefusalRow>(
    data,
    statements.page,
    statements.access ? [...params, readerId] : params,
  );
  return {
    refusal: rows[0]?.refusal ?? null,
    rows: rows.flatMap((row) => messageOf(row) ?? []),
  };
}

/** The refusal of the kind's access SQL for `userId`, alone (a join); null when there is none. */
export async function channelRefusal(
  data: DataAccess,
  statements: ChannelStatements,
  target: ChannelTarget,
  userId: string,
): Promise<string | null> {
  if (!statements.access) return null;
  const [row] = await executeBound<{ refusal: string | null }>(data, statements.access, [
    target[statements.key],
    userId,
  ]);
  return row?.refusal ?? null;
}
