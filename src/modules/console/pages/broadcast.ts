import {
  BROADCAST_CONTENT_MAX_BYTES,
  BROADCAST_USER_IDS_MAX,
  notificationsBroadcast,
} from '../../../../protocol/notifications.js';
import { html } from '../html.js';
import { apiCall, routeOf } from '../operator-api.js';
import { type ConsoleAction, type ConsolePage, field, postForm, textArea } from '../page.js';

/**
 * An admin broadcast: one notification from the system to the users listed or to everyone
 * (docs/notifications.md, "Admin broadcasts"). Which recipients, the code, the subject and the
 * content are the API's to judge; the console only reads the list and the JSON.
 */

const PATH = '/console/broadcast';

/** The ids typed one per line or separated by commas, blanks dropped. */
function userIdsOf(typed: string | undefined): string[] {
  return (typed ?? '').split(/[\s,]+/).filter((id) => id !== '');
}

/** The content typed as JSON: none when empty, else the parsed value or why it is not JSON. */
function contentOf(typed: string | undefined): { value?: unknown } | { error: string } {
  const text = typed?.trim() ?? '';
  if (!text) return {};
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

export const broadcastPage: ConsolePage = {
  path: PATH,
  title: 'Broadcast',
  role: 'admin',
  async render(ctx) {
    return html`<p>Sends one notification from the system (no sender) to each recipient, with its live event. Audited as <code>notifications.broadcast</code>: <a href="/console/audit?action=notifications.broadcast">the broadcasts so far</a>.</p>
${postForm(
  ctx,
  `${PATH}/send`,
  html`<fieldset><legend>Recipients</legend>
<label><input type="radio" name="to" value="users" checked> The users listed below</label>
<label><input type="radio" name="to" value="all"> Everyone: every account, once, in the background</label>
</fieldset>
${textArea('broadcast-user-ids', 'User ids', {
  name: 'user_ids',
  rows: 4,
  hint: `One per line or separated by commas, at most ${BROADCAST_USER_IDS_MAX}; ids naming no account are skipped. Leave it empty to send to everyone.`,
})}
${field('broadcast-code', 'Code', {
  name: 'code',
  required: true,
  max: 64,
  hint: 'A dotted lower-case name that clients recognise, such as maintenance.scheduled.',
})}
${field('broadcast-subject', 'Subject', { name: 'subject', required: true, max: 200 })}
${textArea('broadcast-content', 'Content (optional)', {
  name: 'content',
  rows: 6,
  hint: `A JSON object for the client, at most ${BROADCAST_CONTENT_MAX_BYTES / 1024} KiB, such as {"starts_at": "2030-01-01T00:00:00Z"}.`,
})}`,
  'Send the broadcast',
  { label: 'Broadcast a notification', progress: 'Sending…' },
)}`;
  },
};

export const sendBroadcast: ConsoleAction = {
  path: `${PATH}/send`,
  summary: `Broadcast a notification (${routeOf(notificationsBroadcast)}).`,
  role: 'admin',
  back: PATH,
  unconfirmed: (form) => {
    const content = contentOf(form.content);
    return 'error' in content ? `Nothing was sent: the content is not JSON (${content.error}).` : undefined;
  },
  call: (form) => {
    const ids = userIdsOf(form.user_ids);
    const content = contentOf(form.content);
    return apiCall(notificationsBroadcast, {
      body: {
        // Ids typed with "everyone" chosen go too: the API refuses the two together rather than
        // the console dropping either.
        ...(form.to === 'all' ? { all: true } : {}),
        ...(form.to !== 'all' || ids.length > 0 ? { user_ids: ids } : {}),
        code: form.code ?? '',
        subject: form.subject ?? '',
        ...('value' in content ? { content: content.value } : {}),
      },
    });
  },
  done: (answer) => `Broadcast ${(answer as { id: string }).id} accepted.`,
};
