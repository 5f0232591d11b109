import pg from './pg-driver.js';
import { type PipelineOutcome, runPipeline } from './statement-pipeline.js';

/**
 * How a statement of executeBound runs: on Postgres through node-pg as a named prepared
 * statement, on the embedded database in process through PGlite's protocol (embedded-protocol.ts).
 */

export interface PooledConnection {
  query(config: { name?: string; text: string; values: unknown[]; types: typeof pg.types }): Promise<{
    rows: unknown[];
  }>;
}

export type Runner = (
  connection: PooledConnection,
  sql: string,
  params: readonly unknown[],
) => Promise<unknown[]>;

/** A statement to run: its text with `$1..$n` and their values. */
export interface StatementText {
  sql: string;
  params: readonly unknown[];
}

/**
 * Runs statements on one connection in one round trip, in order, up to the first that fails
 * (statement-pipeline.ts); the outcome gives each one's rows and that failure.
 */
export type PipelineRunner = (
  connection: PooledConnection,
  statements: readonly StatementText[],
) => Promise<PipelineOutcome>;

/**
 * Statement texts prepared under a name; repositories use a handful of fixed texts, so the bound
 * only keeps text built at run time from growing the map (such text runs unnamed).
 */
export const MAX_NAMED_STATEMENTS = 500;

export function postgresRunner(): { run: Runner; pipeline: PipelineRunner } {
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
      name = `atrium_${names.size}`;
      names.set(text, name);
    }
    return name;
  };
  const run: Runner = async (connection, text, params) => {
    const name = nameOf(text);
    // pg's default type parsers, as PGlite's: MikroORM gives its connections parsers that keep
    // dates as strings for its own hydration. The config is one literal (`name` undefined runs the
    // statement unnamed): built with an object spread, the same query cost about 27 µs more CPU.
    return (await connection.query({ name, text, values: [...params], types: pg.types })).rows;
  };
  const pipeline: PipelineRunner = (connection, statements) =>
    runPipeline(
      connection as unknown as Parameters<typeof runPipeline>[0],
      statements.map(({ sql, params }) => ({ text: sql, name: nameOf(sql), values: params })),
      pg.types,
    );
  return { run, pipeline };
}
