import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { deliveryBody } from '../../src/modules/webhooks/event-bodies.js';
import { newSecret, signedHeaders } from '../../src/modules/webhooks/signing.js';
import { newId } from '../../src/platform/ids.js';

// Run as a user runs it: `node examples/webhook-receiver.mjs` with the endpoint's secret.
const EXAMPLE = fileURLToPath(new URL('../../examples/webhook-receiver.mjs', import.meta.url));
const DOC = fileURLToPath(new URL('../../docs/webhooks.md', import.meta.url));
/** Generous: the child logs each event it handles right after answering. */
const WAIT = { timeout: 20_000, interval: 20 };

/** The body the service would send for delivery `id` of a new account's user.registered. */
function deliveredBody(id: string): string {
  const at = new Date().toISOString();
  return deliveryBody(id, 'user.registered', {
    id: newId(),
    type: 'user.registered',
    at,
    data: { user_id: newId(), username: 'zoë', created_at: at },
  });
}

/** examples/webhook-receiver.mjs (docs/webhooks.md, "A receiver"), fed requests signed as the service signs them. */
describe('the example webhook receiver', () => {
  const secret = newSecret();
  let child: ChildProcess;
  let url: string;
  /** The webhook-ids the example handled, in order (its `processed` log lines). */
  const processed: string[] = [];

  beforeAll(async () => {
    child = spawn(process.execPath, [EXAMPLE], {
      env: { ...process.env, WEBHOOK_SECRET: secret, PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const listening = new Promise<number>((resolve, reject) => {
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        const entry = JSON.parse(line) as { msg: string; port?: number; id?: string };
        if (entry.msg === 'listening') resolve(entry.port as number);
        if (entry.msg === 'processed') processed.push(entry.id as string);
      });
      child.once('exit', (code) => reject(new Error(`the example exited early with ${code}`)));
    });
    url = `http://127.0.0.1:${await listening}/hooks`;
  });
  afterAll(async () => {
    // Already gone (it exited early): nothing to stop, and its 'close' has been emitted.
    if (child.exitCode !== null || child.signalCode !== null) return;
    const closed = once(child, 'close');
    child.kill('SIGTERM');
    await closed;
  });

  const send = (body: string, headers: Record<string, string>) =>
    fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body });
  /** Signed with the receiver's secret, at this moment, as one attempt of delivery `id`. */
  const signed = (id: string, body: string) => signedHeaders(id, body, [secret], new Date());
  /** Sends a genuine delivery and waits until the example handled it: every request sent before it was decided. */
  const deliverAndWait = async (id = newId()) => {
    const body = deliveredBody(id);
    const response = await send(body, { ...signed(id, body) });
    expect(response.status).toBe(204);
    await vi.waitFor(() => expect(processed).toContain(id), WAIT);
    return id;
  };

  it('answers 2xx to a request signed with the secret, and handles its event', async () => {
    const id = newId();
    const body = deliveredBody(id);
    const response = await send(body, { ...signed(id, body) });
    expect(response.status).toBe(204);
    await vi.waitFor(() => expect(processed).toContain(id), WAIT);
  });

  it('answers 401 to a body changed after signing, and a genuine request with that id is handled after it', async () => {
    const id = newId();
    const body = deliveredBody(id);
    const tampered = body.replace('zoë', 'mallory');
    expect(tampered).not.toBe(body);
    expect((await send(tampered, { ...signed(id, body) })).status).toBe(401);
    await deliverAndWait(id);
    expect(processed.filter((seen) => seen === id)).toHaveLength(1);
  });

  it('answers 401 to a signature by another secret, and to a request without signature headers', async () => {
    const [forged, unsigned] = [newId(), newId()];
    const forgedBody = deliveredBody(forged);
    const otherSecret = signedHeaders(forged, forgedBody, [newSecret()], new Date());
    expect((await send(forgedBody, { ...otherSecret })).status).toBe(401);
    expect((await send(deliveredBody(unsigned), {})).status).toBe(401);
    await deliverAndWait();
    expect(processed).not.toContain(forged);
    expect(processed).not.toContain(unsigned);
  });

  it("accepts a rotation's two signatures, the new secret's first and its own second", async () => {
    const id = newId();
    const body = deliveredBody(id);
    const headers = signedHeaders(id, body, [newSecret(), secret], new Date());
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect((await send(body, { ...headers })).status).toBe(204);
    await vi.waitFor(() => expect(processed).toContain(id), WAIT);
  });

  it('answers 2xx to every attempt of one webhook-id but handles its event once', async () => {
    const id = newId();
    const body = deliveredBody(id);
    // A retry and a redelivery: the same id and bytes, signed again at their own time.
    for (let attempt = 0; attempt < 3; attempt++) {
      expect((await send(body, { ...signed(id, body) })).status).toBe(204);
    }
    // The example handles events in the order it accepted them: once a later one is handled, any
    // second handling of `id` would have been logged already.
    await deliverAndWait();
    expect(processed.filter((seen) => seen === id)).toEqual([id]);
  });

  it('is quoted whole in docs/webhooks.md, so the page shows the code this file tests', () => {
    const quoted = `\`\`\`js\n${readFileSync(EXAMPLE, 'utf8')}\`\`\`\n`;
    expect(readFileSync(DOC, 'utf8')).toContain(quoted);
  });
});
