import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * The webhooks bench's receiver, on 127.0.0.1: answers every POST 204 as soon as its body is in,
 * and keeps each one's arrival beside its body's `created_at` (epoch ms, the arrival to the
 * fraction). `GET /` answers `{arrivals: [[created, arrived], ...], verified}` for what came since
 * the last GET and starts over; `verified` says whether the first POST since then carried a valid
 * signature of WEBHOOK_SECRET (null: none came), so a figure is never of refused or unsigned posts.
 * A process of its own: it shares no event loop with the service or the bench. Prints `{"port": N}`.
 */
const webhook = new Webhook(process.env.WEBHOOK_SECRET as string);
const now = () => performance.timeOrigin + performance.now();
let arrivals: [number, number][] = [];
let verified: boolean | null = null;

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.end(JSON.stringify({ arrivals, verified }));
    arrivals = [];
    verified = null;
    return;
  }
  const arrived = now();
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    body += chunk;
  });
  req.on('end', () => {
    res.writeHead(204).end();
    arrivals.push([Date.parse((JSON.parse(body) as { created_at: string }).created_at), arrived]);
    if (verified !== null) return;
    try {
      webhook.verify(body, req.headers as Record<string, string>);
      verified = true;
    } catch {
      verified = false;
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }));
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
