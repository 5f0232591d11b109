import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { WebhookDelivery } from '../../protocol/webhooks.js';
import { createWebhooksModule } from '../../src/modules/webhooks/index.js';
import { callsAs, registerUser, registerWithRole } from '../helpers/accounts.js';
import { testModules, useTestApp } from '../helpers/app.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

/** What the injected resolver answers for the endpoint's name, switched by the test. */
let answer = ['93.184.216.34'];
const resolve = async () => answer.map((address) => ({ address }));

/**
 * DNS rebinding (docs/webhooks.md, "Address rules"): a name that resolved to a public address
 * when the endpoint was created and resolves to 127.0.0.1 when a delivery is attempted.
 */
describe('a webhook name that resolves to a private address at delivery time', () => {
  const app = useTestApp(
    { WEBHOOK_RETRY_BASE_SECONDS: 60 },
    {
      modules: testModules.map((module) =>
        module.name === 'webhooks' ? createWebhooksModule({ resolve }) : module,
      ),
    },
  );
  const { expectStatus } = callsAs(app);
  let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
  let admin: TokenResponse;
  beforeAll(async () => {
    receiver = await webhookReceiver();
    admin = await registerWithRole(app(), 'admin');
  });
  afterAll(() => receiver.close());

  it('fails the attempt without connecting, saying the address was refused', async () => {
    const port = new URL(receiver.url('/')).port;
    const created = await expectStatus(201, 'POST', '/api/admin/webhooks', admin, {
      url: `http://rebind.example.test:${port}/hook`,
      events: ['user.registered'],
    });
    answer = ['127.0.0.1'];
    await registerUser(app());
    const [delivery] = await vi.waitFor(
      async () => {
        const page = await expectStatus(
          200,
          'GET',
          `/api/admin/webhooks/${created.json().id}/deliveries`,
          admin,
        );
        const items = page.json().items as WebhookDelivery[];
        if (items[0]?.last_error == null) throw new Error('no attempt yet');
        return items;
      },
      { timeout: 30_000, interval: 50 },
    );
    expect(delivery).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_status_code: null,
      last_error: expect.stringMatching(/^address refused, not connected: .*127\.0\.0\.1/),
    });
    expect(receiver.received).toEqual([]);
  });
});
