import { formatRate, lineChart, type Series } from '../chart.js';
import { html } from '../html.js';
import type { NodeSample, NodeSamples, NodeSnapshot } from '../node-samples.js';
import { type ConsolePage, table, when } from '../page.js';

/** Every live node's latest numbers, their sums, and charts of the trends that matter. */
export function overviewPage(samples: Pick<NodeSamples, 'cluster'>): ConsolePage {
  return {
    path: '/console',
    title: 'Overview',
    role: 'moderator',
    async render() {
      const nodes = await samples.cluster();
      const latest = nodes.map((node) => ({ node, now: node.samples.at(-1) }));
      const sum = (pick: (s: NodeSample) => number) =>
        latest.reduce((total, { now }) => total + (now ? pick(now) : 0), 0);
      const series = (pick: (s: NodeSample) => number): Series[] =>
        nodes.map((node) => ({
          label: shortId(node),
          points: node.samples.map((s) => ({ at: s.at, value: pick(s) })),
        }));
      const figures: [string, string][] = [
        ['Nodes', String(nodes.length)],
        ['Open sockets', String(sum((s) => s.sockets))],
        ['Users with a socket', String(sum((s) => s.users))],
        ['HTTP requests/s', formatRate(sum((s) => s.httpPerSecond))],
        ['HTTP 5xx/s', formatRate(sum((s) => s.http5xxPerSecond))],
        ['HTTP 4xx/s', formatRate(sum((s) => s.http4xxPerSecond))],
        ['Frames/s', formatRate(sum((s) => s.framesPerSecond))],
        ['Error frames/s', formatRate(sum((s) => s.errorFramesPerSecond))],
      ];
      return html`<section aria-labelledby="now"><h2 id="now">Now</h2>
<dl class="figures">${figures.map(([label, value]) => html`<div><dt>${label}</dt><dd>${value}</dd></div>`)}</dl>
</section>
<section aria-labelledby="trends"><h2 id="trends">Trends</h2>
<div class="charts">
${lineChart(
  'HTTP requests per second',
  'req/s',
  series((s) => s.httpPerSecond),
)}
${lineChart(
  'HTTP server errors (5xx) per second',
  '5xx/s',
  series((s) => s.http5xxPerSecond),
)}
${lineChart(
  'Gateway frames per second',
  'frames/s',
  series((s) => s.framesPerSecond),
)}
${lineChart(
  'Open sockets',
  'sockets',
  series((s) => s.sockets),
)}
</div></section>
<section aria-labelledby="nodes"><h2 id="nodes">Nodes</h2>
${table(
  'Live nodes, by their latest sample',
  [
    'Node',
    'Up since',
    'Sockets',
    'Users',
    'Req/s',
    '4xx/s',
    '5xx/s',
    'Frames/s',
    'Error frames/s',
    'Sampled',
  ],
  latest.map(
    ({
      node,
      now,
    }) => html`<tr><td><code class="id">${shortId(node)}</code></td><td>${when(new Date(node.startedAt).toISOString())}</td>
<td>${now?.sockets ?? 0}</td><td>${now?.users ?? 0}</td><td>${formatRate(now?.httpPerSecond ?? 0)}</td>
<td>${formatRate(now?.http4xxPerSecond ?? 0)}</td><td>${formatRate(now?.http5xxPerSecond ?? 0)}</td>
<td>${formatRate(now?.framesPerSecond ?? 0)}</td><td>${formatRate(now?.errorFramesPerSecond ?? 0)}</td>
<td>${now ? when(new Date(now.at).toISOString()) : '—'}</td></tr>`,
  ),
)}
<p class="hint">Each node samples its own metrics (the same ones <a href="/metrics">/metrics</a> exports) and shares the samples; a node that stops disappears within three intervals.</p>
</section>`;
    },
  };
}

function shortId(node: NodeSnapshot): string {
  return node.nodeId.slice(0, 8);
}
