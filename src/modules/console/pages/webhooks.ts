import {
  WEBHOOK_DESCRIPTION_MAX,
  WEBHOOK_URL_MAX,
  type WebhookEndpoint,
  webhookEventTypes,
  webhooksCreate,
  webhooksList,
} from '../../../../protocol/webhooks.js';
import { type Html, html } from '../html.js';
import { apiCall, routeOf, segment } from '../operator-api.js';
import { type ConsoleAction, type ConsolePage, field, listing, postForm, when } from '../page.js';
import { ticked } from './leaderboards.js';

/**
 * Webhook endpoints for admins: the list with a creation form, whose answer is the one page that
 * shows the new endpoint's secret. Each endpoint's page (webhook-endpoint.ts) has its delivery log
 * and the rest of its changes.
 */

export const WEBHOOKS_PATH = '/console/webhooks';
const PAGE_SIZE = 20;
export const webhookPath = (webhookId: string): `/console${string}` =>
  `${WEBHOOKS_PATH}/${segment(webhookId)}`;

/** An endpoint's subscription as operators read it. */
export function eventsText(events: readonly string[]): string {
  return events.includes('*') ? '* (every event, later ones included)' : events.join(', ');
}

/**
 * A secret in the page answering the form that made it, and nowhere else: the API never shows it
 * again, and the console keeps no copy (docs/console.md).
 */
export function secretBox(secret: string): Html {
  return html`<div class="ok" role="status">
<p><strong>The signing secret, shown this once.</strong> Copy it into the receiver's configuration now: neither the console nor the API shows it again (rotating it makes a new one).</p>
<p><code>${secret}</code></p>
</div>`;
}

/** The checkboxes of the catalogue, one name each (a form keeps the first value of a name). */
function eventBoxes(): Html {
  return html`<fieldset><legend>Events</legend>
<label><input type="checkbox" name="event:*" value="yes"> <code>*</code>: every event, later ones included</label>
${webhookEventTypes.map(
  (type) =>
    html`<label><input type="checkbox" name="${`event:${type}`}" value="yes"> <code>${type}</code></label>`,
)}
</fieldset>`;
}

/** The ticked events; `*` covers every other, so it goes alone. None ticked is for the API to refuse. */
function eventsOf(form: Readonly<Record<string, string>>): string[] {
  if (ticked(form, 'event:*')) return ['*'];
  return webhookEventTypes.filter((type) => ticked(form, `event:${type}`));
}

/** The endpoints, newest first, and the creation form. */
export const webhooksPage: ConsolePage = {
  path: WEBHOOKS_PATH,
  title: 'Webhooks',
  role: 'admin',
  async render(ctx) {
    const endpoints = await listing<WebhookEndpoint>(ctx, {
      path: WEBHOOKS_PATH,
      filters: html``,
      api: webhooksList,
      query: {},
      pageSize: PAGE_SIZE,
      caption: 'Endpoints, newest first',
      headings: ['URL', 'Events', 'State', 'Description', 'Created'],
      row: (
        endpoint,
      ) => html`<tr><td><a href="${webhookPath(endpoint.id)}"><code>${endpoint.url}</code></a></td><td>${eventsText(endpoint.events)}</td>
<td>${endpoint.enabled ? 'enabled' : 'disabled'}</td><td>${endpoint.description}</td><td>${when(endpoint.created_at)}</td></tr>`,
    });
    return html`${endpoints}
<h2 id="create-webhook">Add an endpoint</h2>
${postForm(
  ctx,
  `${WEBHOOKS_PATH}/create`,
  html`${field('webhook-url', 'URL', {
    name: 'url',
    type: 'url',
    required: true,
    max: WEBHOOK_URL_MAX,
    hint: 'http or https, on an address the service may reach: private networks only when WEBHOOK_ALLOW_PRIVATE_NETWORKS is set.',
  })}
${eventBoxes()}
${field('webhook-description', 'Description (optional)', { name: 'description', max: WEBHOOK_DESCRIPTION_MAX })}`,
  'Add the endpoint',
  { label: 'Add an endpoint', progress: 'Adding…' },
)}`;
  },
};

export const createWebhook: ConsoleAction = {
  path: `${WEBHOOKS_PATH}/create`,
  summary: `Add a webhook endpoint (${routeOf(webhooksCreate)}); the answer shows its secret once.`,
  role: 'admin',
  back: WEBHOOKS_PATH,
  call: (form) =>
    apiCall(webhooksCreate, {
      body: { url: form.url ?? '', events: eventsOf(form), description: form.description ?? '' },
    }),
  shown: {
    title: 'Webhook endpoint added',
    render: (answer) => {
      const created = answer as WebhookEndpoint & { secret: string };
      return html`${secretBox(created.secret)}
<dl class="facts">
<dt>URL</dt><dd><code>${created.url}</code></dd>
<dt>Events</dt><dd>${eventsText(created.events)}</dd>
</dl>
<p><a href="${webhookPath(created.id)}">The endpoint's page</a> · <a href="${WEBHOOKS_PATH}">Back to the webhooks</a></p>`;
    },
  },
};
