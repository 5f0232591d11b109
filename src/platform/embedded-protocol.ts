import { type PGlite, protocol } from '@electric-sql/pglite';
import { MAX_NAMED_STATEMENTS, type Runner } from './statement-runners.js';

/**
 * The embedded database's statement driver: executeBound's statements sent to PGlite in process
 * through its protocol API (the Bind/Execute/Sync message of a prepared statement, bytea
 * parameters in their binary formats, the rows of the answer), not over its socket.
 */

/**
 * PGlite is one database session, so whoever holds the pool's only connection owns it: the
 * caller holds it (its own transaction's, or one acquired for this statement), so no other
 * transaction can be open on the session. The statement goes to PGlite in process, without the
 * wire protocol's trip through the socket, and prepared once under a name as on Postgres: a
 * prepared statement is then one Bind/Execute/Sync call into PGlite instead of the six
 * `pglite.query` makes (parse and describe each time), two to three times less work per statement.
 */
export function embeddedRunner(pglite: PGlite): Runner {
  const prepared = new Map<string, Promise<PreparedStatement>>();
  let names = 0;
  const exchange = (message: Uint8Array) =>
    pglite.runExclusive(() => pglite.execProtocolStream(message)) as Promise<BackendMessage[]>;
  const prepare = async (text: string): Promise<PreparedStatement> => {
    const name = `atrium_${names++}`;
    const { serialize } = protocol;
    const described = await exchange(
      Buffer.concat([
        serialize.parse({ name, text, types: [] }),
        serialize.describe({ type: 'S', name }),
        serialize.sync(),
      ]),
    );
    const messageNamed = (kind: string) => described.find((m) => m.name === kind);
    return {
      name,
      paramTypes: messageNamed('parameterDescription')?.dataTypeIDs ?? [],
      // A statement that returns no rows is described by NoData instead: no fields.
      fields: (messageNamed('rowDescription')?.fields ?? []) as PreparedStatement['fields'],
    };
  };
  // Concurrent first uses of a text share one preparation; a failed one is tried again next time.
  const preparedOnce = (text: string) => {
    let statement = prepared.get(text);
    if (!statement && prepared.size < MAX_NAMED_STATEMENTS) {
      statement = prepare(text);
      prepared.set(text, statement);
      statement.catch(() => prepared.delete(text));
    }
    return statement;
  };
  return async (_heldConnection, text, params) => {
    const statement = await preparedOnce(text);
    if (!statement) return (await pglite.query(text, [...params])).rows;
    const values = params.map((value, index) => {
      if (value === null || value === undefined) return null;
      const type = statement.paramTypes[index] as number;
      if (type === BYTEA && value instanceof Uint8Array) return value;
      if (type === BYTEA_ARRAY && isByteaList(value)) return byteaArrayBinary(value);
      const serializer = pglite.serializers[type];
      if (serializer) return serializer(value);
      return value instanceof Date ? value.toISOString() : String(value);
    });
    const messages = await exchange(bindExecuteSync(statement.name, values));
    return rowsOf(messages, statement.fields, pglite.parsers);
  };
}

interface PreparedStatement {
  name: string;
  paramTypes: number[];
  /** The result's columns, from the statement's description: executions need not describe again. */
  fields: ResultField[];
}

/** A result column, as a statement's RowDescription gives it. */
export interface ResultField {
  name: string;
  dataTypeID: number;
}

/** The parts of PGlite's parsed backend messages read here. */
export interface BackendMessage {
  name: string;
  dataTypeIDs?: number[];
  fields?: ({ name: string; dataTypeID: number } | string | null)[];
}

/**
 * bytea's type id: its parameters are bound as their bytes, as node-pg binds a Buffer, and a
 * bytea[] (a batch of chunk payloads) in the array's binary format.
 */
export const BYTEA = 17;
export const BYTEA_ARRAY = 1001;

export function isByteaList(value: unknown): value is readonly (Uint8Array | null)[] {
  return Array.isArray(value) && value.every((item) => item === null || item instanceof Uint8Array);
}

/** A one-dimensional bytea[] in Postgres' binary array format (array_recv). */
export function byteaArrayBinary(items: readonly (Uint8Array | null)[]): Buffer {
  const header = items.length === 0 ? 12 : 20;
  const size = items.reduce((total, item) => total + 4 + (item?.length ?? 0), header);
  const out = Buffer.allocUnsafe(size);
  let at = out.writeInt32BE(items.length === 0 ? 0 : 1, 0); // dimensions
  at = out.writeInt32BE(items.includes(null) ? 1 : 0, at); // has nulls
  at = out.writeInt32BE(BYTEA, at); // element type
  if (items.length > 0) {
    at = out.writeInt32BE(items.length, at);
    at = out.writeInt32BE(1, at); // lower bound
  }
  for (const item of items) {
    at = out.writeInt32BE(item === null ? -1 : item.length, at);
    if (item === null) continue;
    out.set(item, at);
    at += item.length;
  }
  return out;
}

/** Execute (unnamed portal, every row) then Sync, the same bytes for every statement. */
const EXECUTE_AND_SYNC = Buffer.from([0x45, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0x53, 0, 0, 0, 4]);

/**
 * Bind of the named statement to the unnamed portal, parameters as text but bytes (bytea) as
 * they are, every column as text, then EXECUTE_AND_SYNC, in one buffer sized up front. PGlite's
 * serializer grows a 256-byte buffer and copies it for each parameter, which made a 1 KiB jsonb
 * upsert spend 7% of its CPU binding; it writes bytea as hex, which made a 700 KiB chunk write
 * spend most of its CPU on that text and the garbage it left.
 */
export function bindExecuteSync(statement: string, values: readonly (string | Uint8Array | null)[]): Buffer {
  const binary = values.some((value) => value instanceof Uint8Array);
  let length = 4 + 1 + Buffer.byteLength(statement) + 1 + 2 + (binary ? 2 * values.length : 0) + 2 + 2;
  for (const value of values)
    length += 4 + (value === null ? 0 : typeof value === 'string' ? Buffer.byteLength(value) : value.length);
  const message = Buffer.allocUnsafe(1 + length + EXECUTE_AND_SYNC.length);
  let at = message.writeUInt8(0x42, 0);
  at = message.writeInt32BE(length, at);
  at = message.writeUInt8(0, at); // the unnamed portal
  at += message.write(statement, at);
  at = message.writeUInt8(0, at);
  // Parameter formats: none listed means all text; otherwise one per parameter, 1 for bytes.
  at = message.writeInt16BE(binary ? values.length : 0, at);
  if (binary) for (const value of values) at = message.writeInt16BE(value instanceof Uint8Array ? 1 : 0, at);
  at = message.writeInt16BE(values.length, at);
  for (const value of values) {
    if (value === null) {
      at = message.writeInt32BE(-1, at);
      continue;
    }
    const lengthAt = at;
    at += 4;
    let bytes = value.length;
    if (typeof value === 'string') bytes = message.write(value, at);
    else message.set(value, at);
    message.writeInt32BE(bytes, lengthAt);
    at += bytes;
  }
  at = message.writeInt16BE(0, at); // columns in text format
  EXECUTE_AND_SYNC.copy(message, at);
  return message;
}

/** The data rows as objects keyed by column name, each value through PGlite's parser for its type. */
export function rowsOf(
  messages: readonly BackendMessage[],
  fields: readonly ResultField[],
  parsers: PGlite['parsers'],
): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const message of messages) {
    if (message.name !== 'dataRow') continue;
    const values = message.fields as (string | null)[];
    const row: Record<string, unknown> = {};
    fields.forEach(({ name, dataTypeID }, index) => {
      const value = values[index] ?? null;
      const parser = parsers[dataTypeID];
      row[name] = value === null || !parser ? value : parser(value, dataTypeID);
    });
    rows.push(row);
  }
  return rows;
}
