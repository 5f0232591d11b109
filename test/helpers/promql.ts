/**
 * The metric names a PromQL expression selects: what is left once strings, label matchers, ranges
 * and grouping clauses are removed, less functions (a name before `(`), keywords and Grafana's
 * variables (`$instance`). Enough for the queries of deploy/, not a PromQL parser.
 */
export function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  // Not after a word character, `$` or `.` (numbers such as 1e-9, durations such as 5m, variables).
  for (const match of bare.matchAll(/(?<![\w$.:])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()/g)) {
    const name = match[1] as string;
    if (!KEYWORDS.has(name.toLowerCase())) names.add(name);
  }
  return [...names];
}

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'atan2',
  'inf',
  'nan',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
]);

/** The metric a Grafana `label_values(<selector>, <label>)` variable query reads, as PromQL. */
export function selectorOfLabelValues(query: string): string | undefined {
  return /label_values\(\s*([^,)]+?)\s*,/.exec(query)?.[1];
}
