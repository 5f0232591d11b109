import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { authLogin, authLogout } from '../../../protocol/auth.js';
import type { OutputOf } from '../../../protocol/operation.js';
import { usersMe } from '../../../protocol/users.js';
import type { HttpServer } from '../../platform/http.js';
import { mediaResponse } from '../../platform/openapi.js';
import {
  type ConsoleDeps,
  consoleRoute,
  consoleSchema,
  csrfRefused,
  formOf,
  refuse,
  SESSION_COOKIE,
} from './console-http.js';
import { consoleCookie, parseCookies } from './cookies.js';
import { type Html, html } from './html.js';
import { bare } from './layout.js';
import { apiCall, tokensOf } from './operator-api.js';
import { problemBox } from './page.js';
import { overTls, sameOrigin } from './security.js';
import { operatorRole, randomToken, sameSecret } from './session.js';

/**
 * Signing in to the console: the API's own login (its rate limits, lockout and suspension
 * included), then the account's roles from `users.me`. Only a moderator or admin gets a
 * console session; anyone else gets a 403 page and their new API session is ended at once.
 *
 * The form carries a token that must equal a short-lived cookie (double submit), so another site
 * cannot sign a browser in to an account of its choosing.
 */

const SIGN_IN_COOKIE = 'atrium_console_signin';
const SIGN_IN_FORM_SECONDS = 3600;

interface SignInDeps extends ConsoleDeps {
  sessionCookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string;
}

interface TokenAnswer {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

const htmlPage = (description: string) => mediaResponse(description, { 'text/html': z.string() });

export function registerSignIn(scope: HttpServer, deps: SignInDeps): void {
  const form = (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    message: Html | '',
    username = '',
  ) => {
    const token = randomToken();
    reply.header(
      'set-cookie',
      consoleCookie(SIGN_IN_COOKIE, token, { maxAgeSeconds: SIGN_IN_FORM_SECONDS, secure: overTls(request) }),
    );
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(
        bare(
          'Sign in',
          html`${message}
<form method="post" action="/console/sign-in" class="stack" data-progress="Signing in…">
<input type="hidden" name="_csrf" value="${token}">
<label for="username">Username</label>
<input id="username" name="username" autocomplete="username" required maxlength="64" value="${username}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="256">
<button type="submit">Sign in</button>
</form>
<p class="hint">For accounts holding the moderator or admin role.</p>`,
        ).markup,
      );
  };

  scope.get(
    '/console/sign-in',
    {
      ...consoleRoute,
      schema: consoleSchema('signIn.page', 'The sign-in page of the operator console.', {
        200: htmlPage('The sign-in form.'),
        303: z.null().describe('See Other: already signed in, to the console.'),
      }),
    },
    async (request, reply) => {
      const id = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
      if (await deps.sessions.get(id)) return reply.redirect('/console', 303);
      return form(request, reply, 200, '');
    },
  );

  scope.post(
    '/console/sign-in',
    {
      ...consoleRoute,
      schema: consoleSchema(
        'signIn',
        'Sign in with an account holding the moderator or admin role (the API login, then its roles).',
        {
          303: z.null().describe('See Other: signed in, to the console; the session cookie is set.'),
          401: htmlPage('Wrong username or password: the form again, with the problem.'),
          403: htmlPage('Not an operator, suspended, or a form not from this console.'),
          422: htmlPage('A field the API refused: the form again, with the problem.'),
          429: htmlPage('Too many attempts: the form again, with the problem.'),
        },
        true,
      ),
    },
    async (request, reply) => {
      const fields = formOf(request.body);
      const expected = parseCookies(request.headers.cookie).get(SIGN_IN_COOKIE);
      if (!sameOrigin(request) || !expected || !sameSecret(fields._csrf, expected)) return csrfRefused(reply);
      const username = fields.username ?? '';
      const login = await deps.api.anonymous<TokenAnswer>(
        request,
        apiCall(authLogin, { body: { username, password: fields.password ?? '' } }),
      );
      if (!login.ok) {
        if (login.problem.retryAfter) reply.header('retry-after', login.problem.retryAfter);
        return form(request, reply, login.status, problemBox(login.problem), username);
      }
      const tokens = tokensOf(login.body);
      const me = await deps.api.anonymous<OutputOf<typeof usersMe>>(
        request,
        apiCall(usersMe),
        tokens.accessToken,
      );
      if (!me.ok)
        return form(request, reply, me.status === 401 ? 401 : 403, problemBox(me.problem), username);
      if (!operatorRole(me.body.roles)) {
        await deps.api.anonymous(
          request,
          apiCall(authLogout, { body: { refresh_token: tokens.refreshToken } }),
        );
        return refuse(
          reply,
          403,
          'Not an operator',
          html`<p>The account <strong>${me.body.username}</strong> does not hold the moderator or admin role, so it cannot use the console.</p>
<p>An admin grants roles with <code>atrium admin grant &lt;username&gt; moderator</code>.</p>`,
        );
      }
      const id = await deps.sessions.create({
        userId: me.body.id,
        username: me.body.username,
        roles: me.body.roles,
        ...tokens,
        csrf: randomToken(),
      });
      reply.header('set-cookie', [
        deps.sessionCookie(request, id, deps.idleSeconds),
        consoleCookie(SIGN_IN_COOKIE, '', { maxAgeSeconds: 0, secure: overTls(request) }),
      ]);
      return reply.redirect('/console', 303);
    },
  );
}
