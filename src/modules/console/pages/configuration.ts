import { adminConfig, type Setting } from '../../../../protocol/settings.js';
import { html } from '../html.js';
import { apiCall } from '../operator-api.js';
import { type ConsolePage, problemBox, table } from '../page.js';

/** The settings this node runs with (`admin.config`), grouped by who declares them. */
export const configurationPage: ConsolePage = {
  path: '/console/configuration',
  title: 'Configuration in force',
  role: 'admin',
  async render(ctx) {
    const answer = await ctx.api<{ settings: Setting[] }>(apiCall(adminConfig));
    if (!answer.ok) return problemBox(answer.problem);
    const parts = [...new Set(answer.body.settings.map((setting) => setting.part))];
    return html`<p class="hint">As this node parsed its environment at startup. Secrets read <code>[redacted]</code>; URLs keep their host but not their credentials. The README's configuration table says what each one does.</p>
${parts.map(
  (part) =>
    html`<section aria-labelledby="part-${part}"><h2 id="part-${part}">${part}</h2>${table(
      `Settings of ${part}`,
      ['Name', 'Value'],
      answer.body.settings
        .filter((setting) => setting.part === part)
        .map(
          (setting) =>
            html`<tr><th scope="row"><code>${setting.name}</code></th><td>${
              setting.value === null
                ? html`<span class="empty">unset</span>`
                : html`<code>${String(setting.value)}</code>`
            }${setting.redacted ? html` <span class="badge">redacted</span>` : ''}</td></tr>`,
        ),
    )}</section>`,
)}`;
  },
};
