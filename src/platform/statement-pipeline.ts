import { createRequire } from 'node:module';
import pg from './pg-driver.js';

/**
 * Several statements sent to Postgres in one round trip (the extended protocol's pipelining: each
 * statement's Bind, Describe and Execute, then one Sync), through node-pg's custom-query hook
 * (`client.query(submittable)`, as pg-cursor uses it). A round trip costs more CPU than most
 * statements it carries: in a CPU profile of the service under a purchase load (2-core VM,
 * 2026-11-30), 36% of its busy time was the kernel's writev of node-pg's writes to the loopback
 * socket, each waking a Postgres backend, which pays again in its reads and sends. The server
 * runs them in order and, at the first error, skips the rest up to the Sync; in a transaction the
 * error leaves it aborted, as one statement failing alone would.
 */

/** One statement of a pipeline: its text, its name when prepared once per connection, its values. */
export interface PipelinedStatement {
  text: string;
  /** The prepared statement's name; undefined runs the text unnamed (parsed each time). */
  name: string | undefined;
  values: readonly unknown[];
}

/** The rows of each statement that ran, and the first error with the index of its statement. */
export interface PipelineOutcome {
  rows: unknown[][];
  failed?: { index: number; error: unknown };
}

/** What the pipeline uses of node-pg's connection (pg/lib/connection.js). */
interface ProtocolConnection {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(query: { text: string; name?: string; types?: unknown[] }): void;
  bind(config: {
    portal: string;
    statement: string | undefined;
    values: readonly unknown[];
    binary: boolean;
    valueMapper: (value: unknown) => unknown;
  }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(config: { portal: string; rows: number }): void;
  sync(): void;
  on(event: 'parseComplete', listener: () => void): void;
  off(event: 'parseComplete', listener: () => void): void;
}

interface PgResult {
  rows: unknown[];
  addFields(fields: unknown[]): void;
  parseRow(fields: unknown[]): unknown;
}

// node-pg's own value mapping and row parsing, so a pipelined statement binds and reads exactly as
// `client.query` does; neither is in its typed entry point.
const require = createRequire(import.meta.url);
const { prepareValue } = require('pg/lib/utils.js') as { prepareValue: (value: unknown) => unknown };
const Result = require('pg/lib/result.js') as new (rowMode: undefined, types: typeof pg.types) => PgResult;

/**
 * The custom query node-pg runs for a pipeline: it writes every statement at once and routes the
 * answers to the statement they belong to (each ends with CommandComplete). Statements this
 * connection has not prepared yet are parsed in the same write; their names are recorded as they
 * parse, as node-pg records its own.
 */
class Pipeline {
  private readonly results: PgResult[] = [];
  private current = 0;
  private parsed: string[] = [];
  private readonly onParsed = () => {
    const name = this.parsed.shift();
    if (name && this.connection) this.connection.parsedStatements[name] = this.textOf(name);
  };
  private connection: ProtocolConnection | undefined;
  private settled = false;

  constructor(
    private readonly statements: readonly PipelinedStatement[],
    private readonly types: typeof pg.types,
    private readonly settle: (outcome: PipelineOutcome) => void,
  ) {}

  private textOf(name: string): string {
    return this.statements.find((statement) => statement.name === name)?.text ?? '';
  }

  submit(connection: ProtocolConnection): null {
    this.connection = connection;
    connection.on('parseComplete', this.onParsed);
    connection.stream.cork?.();
    try {
      for (const statement of this.statements) {
        const { name } = statement;
        const prepared = name !== undefined && connection.parsedStatements[name] !== undefined;
        if (!prepared && !(name !== undefined && this.parsed.includes(name))) {
          connection.parse({ text: statement.text, name, types: [] });
          if (name !== undefined) this.parsed.push(name);
          // An unnamed statement's ParseComplete has no name to record: keep the queue in step.
          else this.parsed.push('');
        }
        connection.bind({
          portal: '',
          statement: name,
          values: statement.values,
          binary: false,
          valueMapper: prepareValue,
        });
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
        this.results.push(new Result(undefined, this.types));
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: unknown[] }): void {
    this.results[this.current]?.addFields(message.fields);
  }

  handleDataRow(message: { fields: unknown[] }): void {
    const result = this.results[this.current];
    result?.rows.push(result.parseRow(message.fields));
  }

  handleCommandComplete(): void {
    this.current++;
  }

  handleEmptyQuery(): void {
    this.current++;
  }

  handlePortalSuspended(): void {}

  handleCopyInResponse(): void {}

  handleCopyData(): void {}

  /**
   * node-pg gives a server's error here, then the connection's ReadyForQuery to nobody: the
   * exchange is over. Its read timeout (query_timeout) comes here too, but the exchange goes on:
   * the server may still parse this pipeline's statements, and their names must be recorded until
   * its ReadyForQuery, or their next use would prepare them again (42P05, "already exists").
   */
  handleError(error: unknown): void {
    this.finish({ index: Math.min(this.current, this.statements.length - 1), error });
    if (error instanceof pg.DatabaseError) this.connection?.off('parseComplete', this.onParsed);
  }

  handleReadyForQuery(): void {
    this.finish(undefined);
    this.connection?.off('parseComplete', this.onParsed);
  }

  private finish(failed: PipelineOutcome['failed']): void {
    if (this.settled) return;
    this.settled = true;
    const rows = this.results.slice(0, failed ? failed.index : this.results.length).map((r) => r.rows);
    this.settle(failed ? { rows, failed } : { rows });
  }
}

/** Runs `statements` on a node-pg client in one round trip; never rejects for a statement's error. */
export function runPipeline(
  client: { query(submittable: unknown): unknown },
  statements: readonly PipelinedStatement[],
  types: typeof pg.types,
): Promise<PipelineOutcome> {
  return new Promise((resolve) => {
    client.query(new Pipeline(statements, types, resolve));
  });
}
