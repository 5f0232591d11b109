import { readFileSync } from 'node:fs';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { authLogout } from '../../../protocol/auth.js';
import type { HttpServer } from '../../platform/http.js';
import { mediaResponse } from '../../platform/openapi.js';
import {
  type ConsoleDeps,
  consoleRoute,
  consoleSchema,
  csrfRefused,
  FORM_LIMIT_BYTES,
  formOf,
  htmlPage,
  refuse,
  refused,
  SESSION_COOKIE,
  seeOther,
  withPathIds,
} from './console-http.js';
import { consoleCookie, parseCookies } from './cookies.js';
import { type Html, html } from './html.js';
import { ASSETS, shell } from './layout.js';
import { apiCall, SessionEnded } from './operator-api.js';
import type { PageContext } from './page.js';
import { overTls, parseForm, sameOrigin, setSecurityHeaders } from './security.js';
import { allows, type ConsoleSession, type Flash, sameSecret } from './session.js';
import { registerSignIn } from './sign-in.routes.js';

/**
 * The console's routes: its static files, sign-in and sign-out (sign-in.routes.ts), one GET per
 * page and one POST per action, all in a scope of their own that reads urlencoded forms and sets
 * the console's security headers. They are HTML pages, described in the OpenAPI document under
 * the `console` tag as /docs is; every change they make goes through an API route.
 */

export function registerConsoleRoutes(http: HttpServer, deps: ConsoleDeps): void {
  http.register(async (scope) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_LIMIT_BYTES },
      (_request, body, done) => done(null, parseForm(body as string)),
    );
    scope.addHook('onRequest', (request, reply, done) => {
      setSecurityHeaders(reply, request.url.startsWith('/console/assets/') ? 'no-cache' : 'no-store');
      done();
    });
    registerAssets(scope as HttpServer);
    const sessionCookie = (request: FastifyRequest, value: string, maxAgeSeconds: number) =>
      consoleCookie(SESSION_COOKIE, value, { maxAgeSeconds, secure: overTls(request) });
    registerSignIn(scope as HttpServer, { ...deps, sessionCookie });

    /** The signed-in session, or a redirect to sign-in. */
    const sessionOf = async (request: FastifyRequest) => {
      const id = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
      const session = await deps.sessions.get(id);
      return id && session ? { id, session } : undefined;
    };
    const toSignIn = (reply: FastifyReply) => reply.redirect('/console/sign-in', 303);
    const ended = async (request: FastifyRequest, reply: FastifyReply, id: string) => {
      await deps.sessions.destroy(id);
      reply.header('set-cookie', sessionCookie(request, '', 0));
      return toSignIn(reply);
    };
    /** A page in the signed-in shell, with the navigation the operator's roles open. */
    const signedInPage = (
      reply: FastifyReply,
      session: ConsoleSession,
      page: { title: string; path: string; flash?: Flash | undefined; content: Html },
    ) => {
      const nav = deps.pages.filter(
        (candidate) => !candidate.path.includes(':') && allows(session.roles, candidate.role),
      );
      return reply
        .type('text/html; charset=utf-8')
        .send(shell({ ...page, operator: session, csrf: session.csrf, nav }).markup);
    };
    const roleRefused = (reply: FastifyReply) =>
      refuse(
        reply,
        403,
        'Not for your role',
        html`<p>Your roles do not open this page.</p><p><a href="/console">Back to the overview</a></p>`,
      );

    for (const page of deps.pages) {
      scope.get(
        page.path,
        {
          ...consoleRoute,
          schema: withPathIds(
            page.path,
            consoleSchema(`page.${slug(page.path)}`, `The console's ${page.title} page.`, {
              200: htmlPage('The page.'),
              303: seeOther,
              403: refused,
            }),
          ),
        },
        async (request, reply) => {
          const signedIn = await sessionOf(request);
          if (!signedIn) return toSignIn(reply);
          const { id, session } = signedIn;
          if (!allows(session.roles, page.role)) return roleRefused(reply);
          const flash = session.flash;
          if (flash) {
            delete session.flash;
            await deps.sessions.save(id, session);
          }
          const ctx: PageContext = {
            operator: { username: session.username, roles: session.roles },
            query: firstValues(request.query),
            params: request.params as Record<string, string>,
            csrf: session.csrf,
            api: (call) => deps.api.call(request, id, session, call),
          };
          let content: Html;
          try {
            content = await page.render(ctx);
          } catch (err) {
            if (err instanceof SessionEnded) return ended(request, reply, id);
            throw err;
          }
          return signedInPage(reply, session, { title: page.title, path: page.path, flash, content });
        },
      );
    }

    for (const action of deps.actions) {
      scope.post(
        action.path,
        {
          ...consoleRoute,
          schema: withPathIds(
            action.path,
            consoleSchema(
              `action.${slug(action.path)}`,
              action.summary,
              {
                ...(action.shown ? { 200: htmlPage(`${action.shown.title}: shown this once.`) } : {}),
                303: seeOther,
                403: refused,
              },
              true,
            ),
          ),
        },
        async (request, reply) => {
          const form = formOf(request.body);
          if (!sameOrigin(request)) return csrfRefused(reply);
          const signedIn = await sessionOf(request);
          if (!signedIn) return toSignIn(reply);
          const { id, session } = signedIn;
          if (!sameSecret(form._csrf, session.csrf)) return csrfRefused(reply);
          if (!allows(session.roles, action.role)) return roleRefused(reply);
          const params = request.params as Record<string, string>;
          const back = (done: boolean) =>
            typeof action.back === 'function' ? action.back(params, done) : action.back;
          const unconfirmed = action.unconfirmed?.(form);
          if (unconfirmed) {
            session.flash = { kind: 'error', text: unconfirmed };
            await deps.sessions.save(id, session);
            return reply.redirect(back(false), 303);
          }
          let done = false;
          try {
            const answer = await deps.api.call(request, id, session, action.call(form, params));
            done = answer.ok;
            if (!answer.ok) {
              session.flash = {
                kind: 'error',
                text: `${answer.problem.title}: ${answer.problem.detail}${fieldList(answer.problem.errors)}`,
              };
            } else if (action.shown) {
              // Answered here and kept nowhere: not in the session's flash, not behind a redirect.
              return signedInPage(reply, session, {
                title: action.shown.title,
                path: back(true),
                content: action.shown.render(answer.body, params),
              });
            } else {
              session.flash = { kind: 'notice', text: action.done(answer.body) };
            }
          } catch (err) {
            if (err instanceof SessionEnded) return ended(request, reply, id);
            throw err;
          }
          await deps.sessions.save(id, session);
          return reply.redirect(back(done), 303);
        },
      );
    }

    scope.post(
      '/console/sign-out',
      {
        ...consoleRoute,
        schema: consoleSchema(
          'signOut',
          'Sign out: ends the console session and its API session.',
          { 303: seeOther, 403: refused },
          true,
        ),
      },
      async (request, reply) => {
        const form = formOf(request.body);
        if (!sameOrigin(request)) return csrfRefused(reply);
        const signedIn = await sessionOf(request);
        if (!signedIn) return toSignIn(reply);
        if (!sameSecret(form._csrf, signedIn.session.csrf)) return csrfRefused(reply);
        await signOut(request, deps, signedIn.session);
        return ended(request, reply, signedIn.id);
      },
    );
  });
}

/** Ends the operator's API session (its refresh token stops working), then the console's. */
async function signOut(request: FastifyRequest, deps: ConsoleDeps, session: ConsoleSession): Promise<void> {
  await deps.api.anonymous(request, apiCall(authLogout, { body: { refresh_token: session.refreshToken } }));
}

function registerAssets(scope: HttpServer): void {
  for (const [file, type] of [
    ['console.css', 'text/css'],
    ['console.js', 'text/javascript'],
  ] as const) {
    const body = readFileSync(new URL(`./assets/${file}`, import.meta.url), 'utf8');
    scope.get(
      file === 'console.css' ? ASSETS.css : ASSETS.js,
      {
        ...consoleRoute,
        schema: consoleSchema(`asset.${file.replace('.', '-')}`, `The console's ${file}.`, {
          200: mediaResponse(`The console's ${file}.`, { [type]: z.string() }),
        }),
      },
      async (_request, reply) => reply.type(`${type}; charset=utf-8`).send(body),
    );
  }
}

function firstValues(query: unknown): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') fields[name] = first;
  }
  return fields;
}

function fieldList(errors: { path: string; message: string }[] | undefined): string {
  return errors?.length ? ` (${errors.map((error) => `${error.path} ${error.message}`).join('; ')})` : '';
}

function slug(path: string): string {
  return (
    path
      .replace(/^\/console\/?/, '')
      .replace(/[/:]+/g, '.')
      .replace(/^$/, 'overview') || 'overview'
  );
}
