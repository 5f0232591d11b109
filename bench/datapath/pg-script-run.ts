import pg from 'pg';

/**
 * Runs a pgbench script through `pg` (node-postgres) instead of libpq: the ceiling "the plain SQL
 * through `pg`" of an issue, with the rows decoded into objects as a Node service gets them.
 * PG_SCRIPT_RUN (JSON) gives the script, its variables (pgbench's -D), the connection, the clients
 * and the seconds. Like `pgbench -M prepared`, each client is one connection looping over the
 * script, each SQL command a named prepared statement whose `:name`s are bound parameters. The
 * subset of pgbench's script language the benchmarks use: `\set name expr` (integers, + - * %,
 * parentheses, random(a, b), least, greatest) and `\gset` after a command. Prints
 * `{"transactions": N, "seconds": S, "cores": C}` when done (C: the CPU this process used).
 */

interface Job {
  script: string;
  variables: Record<string, string>;
  target: { host: string; port: number; user: string; database: string };
  clients: number;
  seconds: number;
}

type Variables = Map<string, string>;
type Step =
  | { set: string; expression: string }
  | { name: string; sql: string; params: string[]; gset: boolean };

/** A `:name` outside a `::type` cast. */
const VARIABLE = /(?<!:):([A-Za-z_][A-Za-z0-9_]*)/g;

function parse(script: string): Step[] {
  const steps: Step[] = [];
  let sql = '';
  const endCommand = (gset: boolean) => {
    const text = sql.trim();
    sql = '';
    if (!text) return;
    const params: string[] = [];
    const bound = text.replace(VARIABLE, (_, name: string) => {
      if (!params.includes(name)) params.push(name);
      return `$${params.indexOf(name) + 1}`;
    });
    steps.push({ name: `script_${steps.length}`, sql: bound, params, gset });
  };
  for (const line of script.split('\n')) {
    const set = /^\\set (\w+) (.+)$/.exec(line);
    if (set) {
      steps.push({ set: set[1] as string, expression: set[2] as string });
      continue;
    }
    const parts = line.split(/(\\gset|;)/);
    for (const part of parts) {
      if (part === '\\gset' || part === ';') endCommand(part === '\\gset');
      else sql += `${part}\n`;
    }
  }
  endCommand(false);
  return steps;
}

function evaluate(expression: string, variables: Variables): string {
  const js = expression
    .replace(VARIABLE, (_, name: string) => {
      const value = variables.get(name);
      if (value === undefined || !/^-?\d+$/.test(value)) throw new Error(`\\set: :${name} is no integer`);
      return value;
    })
    .replace(/\bleast\(/g, 'Math.min(')
    .replace(/\bgreatest\(/g, 'Math.max(');
  if (!/^[\d\s+\-*%(),]*$/.test(js.replace(/random|Math\.min|Math\.max/g, '')))
    throw new Error(`\\set: unsupported expression ${expression}`);
  const random = (low: number, high: number) => low + Math.floor(Math.random() * (high - low + 1));
  return String(new Function('random', `return (${js});`)(random));
}

async function client(job: Job, steps: Step[], until: number): Promise<number> {
  const connection = new pg.Client(job.target);
  await connection.connect();
  let transactions = 0;
  try {
    while (performance.now() < until) {
      const variables: Variables = new Map(Object.entries(job.variables));
      for (const step of steps) {
        if ('set' in step) {
          variables.set(step.set, evaluate(step.expression, variables));
          continue;
        }
        const values = step.params.map((name) => variables.get(name) ?? null);
        const { rows } = await connection.query({ name: step.name, text: step.sql, values });
        if (step.gset)
          for (const [column, value] of Object.entries(rows[0] ?? {})) variables.set(column, String(value));
      }
      transactions++;
    }
  } finally {
    await connection.end();
  }
  return transactions;
}

const job = JSON.parse(process.env.PG_SCRIPT_RUN as string) as Job;
const steps = parse(job.script);
const [started, cpu] = [performance.now(), process.cpuUsage()];
const counts = await Promise.all(
  Array.from({ length: job.clients }, () => client(job, steps, started + job.seconds * 1000)),
);
const transactions = counts.reduce((sum, n) => sum + n, 0);
const used = process.cpuUsage(cpu);
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ transactions, seconds, cores: (used.user + used.system) / 1e6 / seconds }));
