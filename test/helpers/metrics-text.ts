import type { App } from '../../src/app.js';

/** The app's /metrics text, as Prometheus scrapes it. */
export async function scrape(app: Pick<App, 'http'>): Promise<string> {
  const response = await app.http.inject({ method: 'GET', url: '/metrics' });
  if (response.statusCode !== 200) throw new Error(`/metrics answered ${response.statusCode}`);
  return response.body;
}

/**
 * The value of one series in the exposition text, `series` written as it is there
 * (`atrium_dependency_up{dependency="kv"}`); undefined when the text has no such line.
 */
export function sampleOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The names of the metric families the text declares (`# TYPE name type`), with their types. */
export function metricFamilies(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm))
    families.set(match[1] as string, match[2] as string);
  return families;
}
