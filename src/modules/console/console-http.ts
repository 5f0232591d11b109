import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { errorResponses } from '../../platform/http-schemas.js';
import { DOCUMENTED_BODIES, mediaResponse } from '../../platform/openapi.js';
import { type Html, html } from './html.js';
import { bare } from './layout.js';
import type { OperatorApi } from './operator-api.js';
import type { ConsoleAction, ConsolePage } from './page.js';
import type { ConsoleSessions } from './session.js';

/** What the console's route files share: its cookie, its route schemas and its refusal pages. */

export const SESSION_COOKIE = 'atrium_console';
/** The largest form the console reads; its forms hold a few short fields. */
export const FORM_LIMIT_BYTES = 16 * 1024;

export interface ConsoleDeps {
  pages: readonly ConsolePage[];
  actions: readonly ConsoleAction[];
  sessions: ConsoleSessions;
  api: OperatorApi;
  idleSeconds: number;
}

export const htmlPage = (description: string) => mediaResponse(description, { 'text/html': z.string() });
export const seeOther = z.null().describe('See Other: the page to go to next, in Location.');
export const refused = htmlPage(
  'Refused: the operator lacks the role, or the form is not from this console (CSRF).',
);
/** The fields of a console form (urlencoded); `_csrf` is the session's token. */
export const formBody = { 'application/x-www-form-urlencoded': z.record(z.string(), z.string()) };

/** The route schema of a console page or form: documented as HTML, never as an API operation. */
export function consoleSchema(
  operationId: string,
  summary: string,
  response: Record<number, unknown>,
  form = false,
) {
  return {
    operationId: `console.${operationId}`,
    tags: ['console'],
    summary,
    response,
    ...(form ? { [DOCUMENTED_BODIES]: formBody } : {}),
  };
}

/**
 * The schema of a page or form about one thing (`/console/users/:user_id`): its ids are bounded as
 * the API's are (over 64 characters: 422), and a path that resolves to no route once its `..` are
 * taken answers 404, as the API's routes with ids do.
 */
export function withPathIds<S extends { response: Record<number, unknown> }>(path: string, schema: S) {
  const names = [...path.matchAll(/:(\w+)/g)].map((match) => match[1] as string);
  if (names.length === 0) return schema;
  return {
    ...schema,
    params: z.object(Object.fromEntries(names.map((name) => [name, z.string().max(64)]))),
    response: { ...schema.response, ...errorResponses(404) },
  };
}

/** Marks the route as the console's: public to the API's bearer check (the console has its own sessions). */
export const consoleRoute = { config: { public: true } } as const;

/** A refusal page with its status. */
export function refuse(reply: FastifyReply, status: number, title: string, content: Html): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(bare(title, content).markup);
}

export function csrfRefused(reply: FastifyReply): FastifyReply {
  return refuse(
    reply,
    403,
    'Form refused',
    html`<p>This form was not sent from a page of this console, or the page is too old. Nothing was changed.</p>
<p><a href="/console">Reload the console</a> and try again.</p>`,
  );
}

export function formOf(body: unknown): Record<string, string> {
  return typeof body === 'object' && body !== null ? (body as Record<string, string>) : Object.create(null);
}
