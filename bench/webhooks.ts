import { runPerBackend } from './scenario.js';
import { measureWebhooks } from './webhooks/measure.js';
import { webhooksReport } from './webhooks/report.js';

/**
 * Webhooks and the inbox (docs/notifications.md): deliveries/s of the delivery job draining a seeded
 * backlog beside a bare script posting the same signed bodies; on Postgres the outbox lag at 500
 * events/s, from the commit to the receiver; the inbox list and unread count of a user with 1,000
 * notifications beside bare Fastify running the same statements. Usage: npm run bench -- webhooks
 * [--backends embedded,postgres] [--seconds N] (N: the measured time per contender of the rounds,
 * of each one-client run and of the lag; default 10) [--profile DIR] (a V8 CPU profile of the
 * service into DIR). Writes bench/results/webhooks.md.
 */
export function run(seconds: number): Promise<string> {
  return runPerBackend('webhooks', seconds, measureWebhooks, webhooksReport);
}
