import { request } from 'node:http';
import { deliveryBody } from '../../src/modules/webhooks/event-bodies.js';
import { signedHeaders } from '../../src/modules/webhooks/signing.js';
import { newId } from '../../src/platform/ids.js';
import { benchEvent, EVENT_TYPE, paced } from './events.js';

/**
 * The ceiling of the webhooks bench: posting deliveries with nothing around them (no database, no
 * claim, no address check). BARE_WEBHOOKS is a BarePost. Each post is a delivery's body as the
 * fan-out writes it (deliveryBody of a `user.deleted` event made now), signed by the service's own
 * signedHeaders, sent by node:http on a connection of its own (agent: false) as an attempt is, and
 * counted when a 2xx came back. Without `rate`, `concurrency` loops post one after another for
 * `seconds` (the service attempts its claims 32 at once); with it, posts go out at that rate
 * whatever the answers do, each body's `created_at` its send time: the floor of the outbox lag.
 * Prints `{posted, failed, seconds, cores}`.
 */
export interface BarePost {
  url: string;
  secret: string;
  seconds: number;
  concurrency: number;
  rate?: number;
}

const job = JSON.parse(process.env.BARE_WEBHOOKS as string) as BarePost;
const url = new URL(job.url);
let posted = 0;
let failed = 0;

function post(): Promise<void> {
  const id = newId();
  const now = new Date();
  const body = deliveryBody(id, EVENT_TYPE, benchEvent(now));
  return new Promise((resolve) => {
    const req = request({
      method: 'POST',
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      headers: {
        ...signedHeaders(id, body, [job.secret], now),
        host: url.host,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      },
      agent: false,
    });
    req.on('error', () => {
      failed++;
      resolve();
    });
    req.on('response', (res) => {
      res.resume();
      if (res.statusCode && res.statusCode < 300) posted++;
      else failed++;
      resolve();
    });
    req.end(body);
  });
}

const cpu = process.cpuUsage();
const started = performance.now();
if (job.rate) await paced(job.rate, job.seconds, post);
else {
  const end = started + job.seconds * 1000;
  const loop = async () => {
    while (performance.now() < end) await post();
  };
  await Promise.all(Array.from({ length: job.concurrency }, loop));
}
const seconds = (performance.now() - started) / 1000;
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ posted, failed, seconds, cores: (used.user + used.system) / 1e6 / seconds }));
