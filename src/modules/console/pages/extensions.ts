import type { ExtensionOverview, ExtensionsApi } from '../../extensions/index.js';
import { type Html, html } from '../html.js';
import { type ConsolePage, table } from '../page.js';

type Site = ExtensionOverview['functions'][number];

const KINDS: Record<Site['kind'], string> = {
  rpc: 'rpc',
  before: 'before hook',
  after: 'after hook',
  event: 'event handler',
};

/**
 * The server extensions this process loaded (EXTENSIONS): each one's rpcs with their auth, its
 * hooks and event handlers, and the calls of each by outcome. It reads the extensions module
 * itself, as the overview reads the node's samples: what a process loaded is no API resource.
 */
export function extensionsPage(extensions: Pick<ExtensionsApi, 'overview'>): ConsolePage {
  return {
    path: '/console/extensions',
    title: 'Extensions',
    role: 'admin',
    async render() {
      const loaded = await extensions.overview();
      if (loaded.length === 0) {
        return html`<p class="empty">No extensions are loaded: the <code>EXTENSIONS</code> setting names none.</p>`;
      }
      return html`<p class="hint">In the order <code class="id">EXTENSIONS</code> loads them. Calls are counted by the process serving this page since it started (one worker's with <code class="id">WORKERS</code>); <a href="/metrics">/metrics</a> exports them as <code class="id">atrium_extension_calls_total</code>.</p>
${loaded.map(section)}`;
    },
  };
}

function section(extension: ExtensionOverview): Html {
  const id = `extension-${extension.name}`;
  return html`<section aria-labelledby="${id}"><h2 id="${id}">${extension.name}</h2>
<p>Loaded from <code>${extension.path}</code></p>
${table(
  `What ${extension.name} registered, with its calls by outcome`,
  ['Kind', 'Name', 'Auth', 'OK', 'Refused', 'Errors', 'Timeouts'],
  extension.functions.map(
    (
      site,
    ) => html`<tr><td>${KINDS[site.kind]}</td><td><code class="id">${site.name}</code></td><td>${site.auth ?? '—'}</td>
<td class="num">${site.calls.ok}</td><td class="num">${site.calls.refused}</td><td class="num">${site.calls.error}</td><td class="num">${site.calls.timeout}</td></tr>`,
  ),
)}</section>`;
}
