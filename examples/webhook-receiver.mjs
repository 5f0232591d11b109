#!/usr/bin/env node
// A webhook receiver for Atrium (docs/webhooks.md), in plain Node with the `standardwebhooks`
// package. It shows what every receiver does:
//   1. verify the signature over the raw body bytes, before anything else: a bad one is 401;
//   2. dedupe on `webhook-id`: a retry or a redelivery of an event it has is answered 2xx again
//      but not handled twice;
//   3. answer 2xx at once and do the work afterwards, so a slow handler never runs into the
//      service's timeout (which would make it retry an event that did arrive).
// Run it with the endpoint's secret (the 201 of POST /api/admin/webhooks):
//   WEBHOOK_SECRET=whsec_... PORT=4000 node examples/webhook-receiver.mjs
// It logs one JSON line per event it handles ({"msg":"processed","id":...,"type":...}).
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

if (!process.env.WEBHOOK_SECRET) {
  console.error('Set WEBHOOK_SECRET to the endpoint secret (whsec_...).');
  process.exit(1);
}
// Verifies `v1,<signature>` with the secret, accepting a header that carries two signatures
// (after a rotation), and refuses a `webhook-timestamp` more than 5 minutes off this clock.
const webhook = new Webhook(process.env.WEBHOOK_SECRET);
const port = Number(process.env.PORT ?? 4000);
/** Bodies are small JSON documents; anything much larger is not from Atrium. */
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The `webhook-id`s already accepted. In memory here, so a restart forgets them; a real receiver
 * stores them with the work they start (a unique key), in the same transaction.
 */
const seen = new Set();
/** Accepted events waiting to be handled, oldest first; handled one at a time after the answer. */
const queue = [];
let draining = false;

/** Your work. Switch on `event.type`; `event.data` is as the catalogue in docs/webhooks.md says. */
async function handle(event) {
  console.log(JSON.stringify({ msg: 'processed', id: event.id, type: event.type }));
}

async function drain() {
  if (draining) return;
  draining = true;
  while (queue.length > 0) {
    const event = queue.shift();
    try {
      await handle(event);
    } catch (err) {
      console.error(JSON.stringify({ msg: 'handler failed', id: event.id, error: String(err) }));
    }
  }
  draining = false;
}

/** The raw body, or undefined when it is larger than MAX_BODY_BYTES. */
async function rawBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function receive(req, res) {
  if (req.method !== 'POST') return res.writeHead(405, { allow: 'POST' }).end();
  const body = await rawBody(req);
  if (body === undefined) return res.writeHead(413, { connection: 'close' }).end();
  let event;
  try {
    // The bytes as received: JSON parsed and serialized again may differ from what was signed.
    event = webhook.verify(body, req.headers);
  } catch {
    return res.writeHead(401).end();
  }
  // Only now, once verified: the id is signed, so nobody can burn a real event's id in advance.
  const id = req.headers['webhook-id'];
  if (!seen.has(id)) {
    seen.add(id);
    queue.push(event);
    setImmediate(drain);
  }
  res.writeHead(204).end();
}

// A sender that goes away mid-body ends its own request, not the receiver.
const server = createServer((req, res) => receive(req, res).catch(() => res.destroy()));
server.listen(port, process.env.HOST, () => {
  console.log(JSON.stringify({ msg: 'listening', port: server.address().port }));
});
process.once('SIGTERM', () => server.close());
process.once('SIGINT', () => server.close());
