import { type AuditEntryView, auditList } from '../../../../protocol/audit.js';
import { type Html, html } from '../html.js';
import { type ConsolePage, field, listing, when } from '../page.js';
import { userLink } from './users.js';

const PATH = '/console/audit';
const PAGE_SIZE = 25;
const FILTERS = ['actor', 'target', 'action'] as const;

/** A state as the audit log recorded it: indented JSON, escaped like any text. */
function state(value: AuditEntryView['before']): Html {
  return value === null
    ? html`<span class="empty">—</span>`
    : html`<pre>${JSON.stringify(value, null, 2)}</pre>`;
}

function actor(entry: AuditEntryView): Html {
  if (entry.actor_kind === 'user') return userLink(entry.actor_id);
  return entry.actor_kind === 'extension'
    ? html`extension <code>${entry.actor_id}</code>`
    : html`${entry.actor_kind}`;
}

/** The audit log, newest first, by actor, target and action (moderators see their own actions). */
export const auditPage: ConsolePage = {
  path: PATH,
  title: 'Audit log',
  role: 'moderator',
  async render(ctx) {
    const filters = Object.fromEntries(FILTERS.map((name) => [name, ctx.query[name]?.trim() ?? '']));
    const form = html`<form method="get" action="${PATH}" class="filters" aria-label="Filter the audit log">
${field('actor', 'Actor (account id or extension name)', { value: filters.actor, max: 64 })}
${field('target', 'Target id', { value: filters.target, max: 200 })}
${field('action', 'Action', { value: filters.action, max: 100, hint: 'An exact name: users.suspend, moderation.reports.resolve…' })}
<button type="submit">Show</button></form>`;
    return listing<AuditEntryView>(ctx, {
      path: PATH,
      filters: form,
      api: auditList,
      query: filters,
      pageSize: PAGE_SIZE,
      caption: 'Audit entries, newest first',
      headings: ['At', 'Actor', 'Action', 'Target', 'Before', 'After'],
      row: (
        entry,
      ) => html`<tr><td>${when(entry.at)}</td><td>${actor(entry)}</td><td><code>${entry.action}</code></td>
<td>${entry.target_type} <code>${entry.target_id}</code></td><td>${state(entry.before)}</td><td>${state(entry.after)}</td></tr>`,
    });
  },
};
