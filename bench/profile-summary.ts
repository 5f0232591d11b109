import { readFile } from 'node:fs/promises';

/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`, or `npm run bench -- datapath --profile DIR`):
 * where the samples fell, by package (node_modules/<name>, the service's own src/ files, Node
 * internals, garbage collection, idle) and by function, self time and time including callees.
 * Usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [--top N] [--skip SECONDS] [--until SECONDS];
 * --skip leaves out the profile's first seconds (the service starting up), --until what comes after
 * that second (the later phases of a run). Method: docs/performance.md.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, ...rest] = process.argv.slice(2);
if (!file) throw new Error('Usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [--top N]');
const option = (name: string) => (rest.includes(name) ? Number(rest[rest.indexOf(name) + 1]) : undefined);
const top = option('--top') || 25;
const skipUs = (option('--skip') ?? 0) * 1e6;
const untilUs = (option('--until') ?? Number.POSITIVE_INFINITY) * 1e6;
const profile = JSON.parse(await readFile(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);

function bucket({ functionName, url }: ProfileNode['callFrame']): string {
  if (functionName === '(idle)' || functionName === '(program)' || functionName === '(garbage collector)')
    return functionName;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  const own = /\/(src|protocol)\/(.+?)\.ts/.exec(url);
  if (own) return `${own[1]}/${own[2]}`;
  return url.startsWith('node:') || url === '' ? '(node internals, native)' : url;
}
const label = (n: ProfileNode) =>
  `${n.callFrame.functionName || '(anonymous)'} ${bucket(n.callFrame)}:${n.callFrame.lineNumber + 1}`;

const self = new Map<string, number>();
const total = new Map<string, number>();
const packages = new Map<string, number>();
let all = 0;
let elapsed = 0;
profile.samples.forEach((id, index) => {
  const us = profile.timeDeltas[index] ?? 0;
  elapsed += us;
  if (elapsed < skipUs || elapsed > untilUs) return;
  const leaf = byId.get(id) as ProfileNode;
  all += us;
  self.set(label(leaf), (self.get(label(leaf)) ?? 0) + us);
  packages.set(bucket(leaf.callFrame), (packages.get(bucket(leaf.callFrame)) ?? 0) + us);
  // Each function counts once per sample, however deep its recursion.
  const seen = new Set<string>();
  for (let node: ProfileNode | undefined = leaf; node; node = byId.get(parent.get(node.id) ?? -1)) {
    const name = label(node);
    if (!seen.has(name)) total.set(name, (total.get(name) ?? 0) + us);
    seen.add(name);
  }
});

const busy = all - (packages.get('(idle)') ?? 0);
const share = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
const table = (title: string, entries: Map<string, number>) => {
  console.log(
    `\n${title} (share of busy time, ${(busy / 1e6).toFixed(1)} s busy of ${(all / 1e6).toFixed(1)} s)`,
  );
  for (const [name, us] of [...entries]
    .filter(([n]) => !n.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    console.log(`${share(us)}  ${name}`);
};
table('Self time by package', packages);
table('Self time by function', self);
table('Total time (with callees) by function', total);
