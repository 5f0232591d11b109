import { Gauge, type Registry } from 'prom-client';

/** What a queue of due work holds when scraped: how many are due and how long the oldest has waited. */
export interface Backlog {
  due: number;
  oldestDueSeconds: number;
}

/**
 * Two gauges of a queue kept in the database, read at scrape time by one statement for both:
 * `<prefix>_due_deliveries` and `<prefix>_oldest_due_seconds`. The queue is shared by every node,
 * so every node reports the same figures; in worker mode the host's workers are merged by `max`,
 * not summed. A read that fails (the database unreachable) leaves the last figures in place: the
 * scrape still answers, and the dependency's own gauge says why they are stale.
 */
export function registerBacklogGauges(
  registry: Registry,
  options: { prefix: string; what: string; read: () => Promise<Backlog> },
): void {
  let reading: Promise<void> | undefined;
  const refresh = () => {
    reading ??= options
      .read()
      .then((backlog) => {
        due.set(backlog.due);
        oldest.set(backlog.oldestDueSeconds);
      })
      .catch(() => undefined)
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };
  const due = new Gauge({
    name: `${options.prefix}_due_deliveries`,
    help: `${options.what}: deliveries due and not yet claimed.`,
    aggregator: 'max',
    registers: [registry],
    collect: refresh,
  });
  const oldest = new Gauge({
    name: `${options.prefix}_oldest_due_seconds`,
    help: `${options.what}: how long the oldest due delivery has waited for a claim (0 when none is due).`,
    aggregator: 'max',
    registers: [registry],
    collect: refresh,
  });
}
