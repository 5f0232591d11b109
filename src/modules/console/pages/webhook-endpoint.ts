import {
  type WebhookDelivery,
  type WebhookEndpoint,
  webhookDeliveryStatusSchema,
  webhooksDelete,
  webhooksDeliveries,
  webhooksGet,
  webhooksRedeliver,
  webhooksRotateSecret,
  webhooksUpdate,
} from '../../../../protocol/webhooks.js';
import { type Html, html } from '../html.js';
import { apiCall, routeOf, segment } from '../operator-api.js';
import {
  type ConsoleAction,
  type ConsolePage,
  nextPage,
  type PageContext,
  postForm,
  problemBox,
  select,
  table,
  when,
} from '../page.js';
import { eventsText, secretBox, WEBHOOKS_PATH, webhookPath } from './webhooks.js';

/**
 * One webhook endpoint: its settings, enabling and disabling it, a new secret (shown once, in the
 * page answering the form), its deletion once confirmed, and its delivery log by status with a
 * redelivery per delivery.
 */

const DELIVERIES_PAGE_SIZE = 20;
const STATUSES: readonly string[] = webhookDeliveryStatusSchema.options;

export const webhookPage: ConsolePage = {
  path: `${WEBHOOKS_PATH}/:webhook_id`,
  title: 'Webhook endpoint',
  role: 'admin',
  async render(ctx) {
    const back = html`<p><a href="${WEBHOOKS_PATH}">Back to the webhooks</a></p>`;
    const found = await ctx.api<WebhookEndpoint>(
      apiCall(webhooksGet, { params: { webhook_id: ctx.params.webhook_id ?? '' } }),
    );
    if (!found.ok) return html`${problemBox(found.problem)}${back}`;
    const endpoint = found.body;
    const path = webhookPath(endpoint.id);
    return html`<h2><code>${endpoint.url}</code></h2>
<dl class="facts">
<dt>Id</dt><dd><code>${endpoint.id}</code></dd>
<dt>Events</dt><dd>${eventsText(endpoint.events)}</dd>
<dt>State</dt><dd>${endpoint.enabled ? 'enabled' : 'disabled: no deliveries for the events meanwhile; pending ones wait'}</dd>
<dt>Description</dt><dd>${endpoint.description || '—'}</dd>
<dt>Created</dt><dd>${when(endpoint.created_at)}</dd>
<dt>Changed</dt><dd>${when(endpoint.updated_at)}</dd>
</dl>
<p><a href="${`/console/audit?target=${encodeURIComponent(endpoint.id)}`}">Audit entries about this endpoint</a></p>
<div class="actions">
${postForm(
  ctx,
  `${path}/enabled`,
  html`<input type="hidden" name="enabled" value="${endpoint.enabled ? 'no' : 'yes'}">`,
  endpoint.enabled ? 'Disable' : 'Enable',
  {
    className: 'inline',
    label: endpoint.enabled ? 'Disable the endpoint' : 'Enable the endpoint',
    progress: endpoint.enabled ? 'Disabling…' : 'Enabling…',
  },
)}
${postForm(ctx, `${path}/rotate-secret`, html``, 'Rotate the secret', {
  className: 'inline',
  label: 'Rotate the secret',
  progress: 'Rotating…',
})}
</div>
${await deliveriesSection(ctx, endpoint.id)}
<h2>Delete the endpoint</h2>
${postForm(
  ctx,
  `${path}/delete`,
  html`<label><input type="checkbox" name="confirm" value="yes" required> Delete this endpoint, its delivery log and its pending deliveries, for good.</label>`,
  'Delete the endpoint',
  { label: 'Delete the endpoint', progress: 'Deleting…' },
)}`;
  },
};

/** The delivery log, newest first, in the status the query names (any otherwise). */
async function deliveriesSection(ctx: PageContext, webhookId: string): Promise<Html> {
  const status = STATUSES.includes(ctx.query.status ?? '') ? (ctx.query.status as string) : '';
  const path = webhookPath(webhookId);
  const filter = html`<form method="get" action="${path}" class="filters" aria-label="Filter the deliveries">
${select('status', 'Status', ['', ...STATUSES], status)}<button type="submit">Show</button></form>`;
  const heading = html`<h2>Delivery log</h2>`;
  const answer = await ctx.api<{ items: WebhookDelivery[]; next_cursor: string | null }>(
    apiCall(webhooksDeliveries, {
      params: { webhook_id: webhookId },
      query: { status, limit: DELIVERIES_PAGE_SIZE, cursor: ctx.query.cursor },
    }),
  );
  if (!answer.ok) return html`${heading}${filter}${problemBox(answer.problem)}`;
  return html`${heading}${filter}
${table(
  'Deliveries, newest first',
  ['Delivery', 'Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Created', 'Delivered', ''],
  answer.body.items.map((delivery) => deliveryRow(ctx, webhookId, delivery)),
)}
${nextPage(path, status ? { status } : {}, answer.body.next_cursor)}`;
}

function deliveryRow(ctx: PageContext, webhookId: string, delivery: WebhookDelivery): Html {
  const lastAnswer = html`${delivery.last_status_code ?? '—'}${
    delivery.last_error ? html`<br><small>${delivery.last_error}</small>` : ''
  }`;
  return html`<tr><td><code class="id">${delivery.id}</code></td><td><code>${delivery.event_type}</code></td><td>${delivery.status}</td>
<td class="num">${delivery.attempts}</td><td>${lastAnswer}</td><td>${when(delivery.next_attempt_at)}</td><td>${when(delivery.created_at)}</td>
<td>${when(delivery.delivered_at)}</td><td>${postForm(
    ctx,
    `${webhookPath(webhookId)}/deliveries/${segment(delivery.id)}/redeliver`,
    html``,
    'Redeliver',
    { className: 'inline', label: `Redeliver ${delivery.id}`, progress: 'Redelivering…' },
  )}</td></tr>`;
}

/** The endpoint a form acts on, from the form's path. */
const endpointOf = (params: Readonly<Record<string, string>>) => ({ webhook_id: params.webhook_id ?? '' });
const backToEndpoint = (params: Readonly<Record<string, string>>) => webhookPath(params.webhook_id ?? '');

/** The form's yes or no as a boolean; anything else as sent, for the API to refuse naming the field. */
function yesNo(value: string | undefined): boolean | string {
  if (value === 'yes') return true;
  return value === 'no' ? false : (value ?? '');
}

export const webhookActions: ConsoleAction[] = [
  {
    path: `${WEBHOOKS_PATH}/:webhook_id/enabled`,
    summary: `Enable or disable a webhook endpoint (${routeOf(webhooksUpdate)}).`,
    role: 'admin',
    back: backToEndpoint,
    call: (form, params) =>
      apiCall(webhooksUpdate, { params: endpointOf(params), body: { enabled: yesNo(form.enabled) } }),
    done: (answer) =>
      (answer as WebhookEndpoint).enabled
        ? 'Endpoint enabled: its pending deliveries go out again.'
        : 'Endpoint disabled: it gets no deliveries until it is enabled again.',
  },
  {
    path: `${WEBHOOKS_PATH}/:webhook_id/rotate-secret`,
    summary: `A new secret for a webhook endpoint (${routeOf(webhooksRotateSecret)}); the answer shows it once.`,
    role: 'admin',
    back: backToEndpoint,
    call: (_form, params) => apiCall(webhooksRotateSecret, { params: endpointOf(params) }),
    shown: {
      title: 'Webhook secret rotated',
      render: (answer, params) => html`${secretBox((answer as { secret: string }).secret)}
<p>For <code>WEBHOOK_SECRET_ROTATION_GRACE_SECONDS</code> (a day unless configured) deliveries also carry a signature by the previous secret, so the receiver can switch meanwhile.</p>
<p><a href="${backToEndpoint(params)}">Back to the endpoint</a></p>`,
    },
  },
  {
    path: `${WEBHOOKS_PATH}/:webhook_id/delete`,
    summary: `Delete a webhook endpoint (${routeOf(webhooksDelete)}), once confirmed.`,
    role: 'admin',
    // Once deleted, its page is gone: back to the list. Unconfirmed or refused, back to its page.
    back: (params, done) => (done ? WEBHOOKS_PATH : backToEndpoint(params)),
    unconfirmed: (form) =>
      form.confirm === 'yes' ? undefined : 'Nothing was deleted: tick the box to confirm the deletion first.',
    call: (_form, params) => apiCall(webhooksDelete, { params: endpointOf(params) }),
    done: () => 'Endpoint deleted, with its pending deliveries.',
  },
  {
    path: `${WEBHOOKS_PATH}/:webhook_id/deliveries/:delivery_id/redeliver`,
    summary: `Send a webhook delivery again (${routeOf(webhooksRedeliver)}).`,
    role: 'admin',
    back: backToEndpoint,
    call: (_form, params) =>
      apiCall(webhooksRedeliver, {
        params: { ...endpointOf(params), delivery_id: params.delivery_id ?? '' },
      }),
    done: (answer) =>
      `Delivery ${(answer as WebhookDelivery).id} is due again now, with a fresh budget of attempts.`,
  },
];
