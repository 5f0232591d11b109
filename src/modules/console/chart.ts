import { type Html, html } from './html.js';

/**
 * A small line chart as inline SVG, drawn on the server: one line per series over a shared time
 * axis, the largest value labelled. SVG attributes and elements only (no inline style), so the
 * page's Content-Security-Policy holds; the lines take their colours from console.css classes.
 */

export interface Series {
  label: string;
  points: readonly { at: number; value: number }[];
}

const WIDTH = 600;
const HEIGHT = 120;
const PAD = 4;
/** Series drawn at most; classes line-0 .. line-5 colour them. */
export const MAX_SERIES = 6;

export function lineChart(title: string, unit: string, series: readonly Series[]): Html {
  const shown = series.slice(0, MAX_SERIES).filter((s) => s.points.length > 0);
  const all = shown.flatMap((s) => s.points);
  if (all.length < 2) {
    return html`<figure class="chart"><figcaption>${title}</figcaption><p class="empty">Not enough samples yet.</p></figure>`;
  }
  const first = Math.min(...all.map((p) => p.at));
  const last = Math.max(...all.map((p) => p.at));
  const peakValue = Math.max(...all.map((p) => p.value));
  // A flat zero line sits on the axis rather than dividing by zero.
  const top = peakValue > 0 ? peakValue : 1;
  const x = (at: number) => PAD + ((at - first) / Math.max(last - first, 1)) * (WIDTH - 2 * PAD);
  const y = (value: number) => HEIGHT - PAD - (value / top) * (HEIGHT - 2 * PAD);
  const peak = `${formatRate(peakValue)} ${unit}`;
  const summary = shown
    .map((s) => `${s.label}: now ${formatRate(s.points.at(-1)?.value ?? 0)} ${unit}`)
    .join('; ');
  return html`<figure class="chart">
<figcaption>${title} <small>(peak ${peak} over the last ${span(last - first)})</small></figcaption>
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${`${title}: ${summary}`}" preserveAspectRatio="none">
<line class="axis" x1="${PAD}" y1="${HEIGHT - PAD}" x2="${WIDTH - PAD}" y2="${HEIGHT - PAD}"/>
${shown.map(
  (s, i) =>
    html`<polyline class="line-${i}" fill="none" points="${s.points.map((p) => `${x(p.at).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ')}"/>`,
)}
</svg>
${shown.length > 1 ? html`<ul class="legend">${shown.map((s, i) => html`<li class="key-${i}">${s.label}</li>`)}</ul>` : ''}
</figure>`;
}

function span(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** A rate as people read it: two significant digits below 10, whole numbers above. */
export function formatRate(value: number): string {
  if (value === 0) return '0';
  if (value < 10) return value.toPrecision(2);
  return String(Math.round(value));
}
