import { randomUUID } from 'node:crypto';
import type { Role } from '../../platform/auth/access-tokens.js';
import { type Html, html } from './html.js';
import {
  type ApiRequest,
  type ApiResult,
  apiCall,
  type Problem,
  type RestOperation,
} from './operator-api.js';
import type { OperatorRole } from './session.js';

/**
 * What a console page and an action are made of. A page is a path, a title, the role it needs
 * and a render function over the operator's API; an action is a form's path, the API call it
 * makes and where the operator goes afterwards. A page for a new admin route is one of each,
 * built from the helpers below (docs/console.md).
 */

export interface PageContext {
  operator: { username: string; roles: readonly Role[] };
  /** The query string's fields (first value of each). */
  query: Readonly<Record<string, string>>;
  /** The path's `:name` segments, for a page about one thing (`/console/users/:user_id`). */
  params: Readonly<Record<string, string>>;
  /** The session's CSRF token, which `form()` puts in every form. */
  csrf: string;
  /** Calls the API as the operator. */
  api<T>(call: ApiRequest): Promise<ApiResult<T>>;
}

export interface ConsolePage {
  /** A path with `:name` segments is a page about one thing, reached by links, not in the navigation. */
  path: `/console${string}`;
  /** The navigation label and the page's heading. */
  title: string;
  role: OperatorRole;
  render(ctx: PageContext): Promise<Html>;
}

interface ActionBase {
  /** A Fastify path under /console; `:name` segments arrive in `params`. */
  path: `/console/${string}`;
  /** For the OpenAPI document's summary of the form route. */
  summary: string;
  role: OperatorRole;
  call(form: Readonly<Record<string, string>>, params: Readonly<Record<string, string>>): ApiRequest;
  /**
   * What the form itself lacks before any API call (a confirmation box left unticked, content
   * that is not JSON): the error shown instead of calling the API, or undefined to go ahead.
   */
  unconfirmed?(form: Readonly<Record<string, string>>): string | undefined;
  /**
   * Where the operator goes afterwards (the page the form was on), from the path's segments if it
   * needs them and from whether the action was done (a deleted thing's page is gone; a refusal shows there).
   */
  back:
    | `/console${string}`
    | ((params: Readonly<Record<string, string>>, done: boolean) => `/console${string}`);
}

/**
 * An answer the operator reads once and nothing may keep (a webhook's secret): the form is
 * answered by this page itself, 200, rather than by a redirect and a notice, which the session
 * would store until the next page. A refusal still goes back with its problem.
 */
export interface ShownAnswer {
  title: string;
  render(answer: unknown, params: Readonly<Record<string, string>>): Html;
}

export type ConsoleAction = ActionBase &
  (
    | {
        /** The notice shown after it succeeded. */
        done(answer: unknown): string;
        shown?: never;
      }
    | { shown: ShownAnswer; done?: never }
  );

/** A hidden field carrying a fresh Idempotency-Key: a form submitted twice does its work once. */
export function idempotencyField(): Html {
  return html`<input type="hidden" name="idempotency_key" value="${randomUUID()}">`;
}

/**
 * A POST form with the session's CSRF token. `progress` names what the button says while the
 * request runs (console.js shows it; without script the browser's own indicator does).
 */
export function postForm(
  ctx: PageContext,
  action: string,
  body: Html,
  button: string,
  options: { progress?: string; label?: string; className?: string } = {},
): Html {
  return html`<form method="post" action="${action}" class="${options.className ?? 'stack'}"${
    options.label ? html` aria-label="${options.label}"` : ''
  } data-progress="${options.progress ?? 'Working…'}">
  <input type="hidden" name="_csrf" value="${ctx.csrf}">
  ${body}
  <button type="submit">${button}</button>
</form>`;
}

/** A labelled input; `id` ties the label to it. */
export function field(
  id: string,
  label: string,
  options: {
    name?: string;
    type?: string;
    value?: string;
    required?: boolean;
    hint?: string;
    max?: number;
  } = {},
): Html {
  const hint = options.hint ? html`<small id="${id}-hint">${options.hint}</small>` : '';
  return html`<label for="${id}">${label}</label>
<input id="${id}" name="${options.name ?? id}" type="${options.type ?? 'text'}" value="${options.value ?? ''}"${
    options.required ? html` required` : ''
  }${options.max ? html` maxlength="${options.max}"` : ''}${options.hint ? html` aria-describedby="${id}-hint"` : ''}>
${hint}`;
}

/** A labelled multi-line text field, for lists and JSON typed by hand. */
export function textArea(
  id: string,
  label: string,
  options: { name?: string; rows?: number; hint?: string } = {},
): Html {
  const hint = options.hint ? html`<small id="${id}-hint">${options.hint}</small>` : '';
  return html`<label for="${id}">${label}</label>
<textarea id="${id}" name="${options.name ?? id}" rows="${options.rows ?? 4}"${
    options.hint ? html` aria-describedby="${id}-hint"` : ''
  }></textarea>
${hint}`;
}

/** A labelled select. */
export function select(
  id: string,
  label: string,
  options: readonly string[],
  selected = '',
  name = id,
): Html {
  return html`<label for="${id}">${label}</label>
<select id="${id}" name="${name}">${options.map(
    (option) =>
      html`<option value="${option}"${option === selected ? html` selected` : ''}>${option || '(any)'}</option>`,
  )}</select>`;
}

/** A refusal of the API as the operator should read it: its title, its detail and the fields it names. */
export function problemBox(problem: Problem): Html {
  return html`<div class="problem" role="alert">
  <strong>${problem.title} (${problem.status} ${problem.code})</strong>
  <p>${problem.detail}</p>
  ${
    problem.errors?.length
      ? html`<ul>${problem.errors.map((error) => html`<li><code>${error.path}</code> ${error.message}</li>`)}</ul>`
      : ''
  }
</div>`;
}

/** A table that scrolls sideways on a narrow screen; the region is focusable so keys scroll it. */
export function table(caption: string, headings: readonly string[], rows: readonly Html[]): Html {
  if (rows.length === 0) return html`<p class="empty">${caption}: nothing to show.</p>`;
  return html`<div class="table" role="region" aria-label="${caption}" tabindex="0">
<table><caption>${caption}</caption>
<thead><tr>${headings.map((heading) => html`<th scope="col">${heading}</th>`)}</tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

/**
 * The link to a list's next page: the API's own cursor, carried in the query string under
 * `param` beside the page's other fields, so every table of the console pages as the API does.
 */
export function nextPage(
  path: string,
  query: Readonly<Record<string, string>>,
  nextCursor: string | null,
  param = 'cursor',
): Html {
  if (!nextCursor) return html``;
  const params = new URLSearchParams({ ...query, [param]: nextCursor });
  return html`<p class="pager"><a href="${`${path}?${params}`}" rel="next">Next page</a></p>`;
}

/** A timestamp the way operators read it: UTC, to the second. */
export function when(iso: string | null | undefined): string {
  return iso ? `${iso.slice(0, 19).replace('T', ' ')} UTC` : '—';
}

/** What a list page shows: its filter form, the API list it pages through and one row per item. */
export interface Listing<T> {
  /** The page's own path, which the next-page link points at. */
  path: string;
  filters: Html;
  /** The API's list operation and the filter fields it is given (and the next-page link carries). */
  api: RestOperation<`/api/${string}`>;
  query: Readonly<Record<string, string>>;
  pageSize: number;
  caption: string;
  headings: readonly string[];
  row(item: T): Html;
}

/**
 * A list page's body: the filter form, then one page of the API's list as a table with the link
 * to the next, or the API's refusal under the form.
 */
export async function listing<T>(ctx: PageContext, list: Listing<T>): Promise<Html> {
  const answer = await ctx.api<{ items: T[]; next_cursor: string | null }>(
    apiCall(list.api, { query: { ...list.query, limit: list.pageSize, cursor: ctx.query.cursor } }),
  );
  if (!answer.ok) return html`${list.filters}${problemBox(answer.problem)}`;
  return html`${list.filters}
${table(list.caption, list.headings, answer.body.items.map(list.row))}
${nextPage(list.path, list.query, answer.body.next_cursor)}`;
}
