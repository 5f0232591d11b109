import { z } from 'zod';
import { operation } from './operation.js';
import { streamPositionSchema } from './stream-position.js';
import { text } from './text.js';
import { roleSchema } from './users.js';

/** Request and response shapes of the account and session endpoints (REST) and the auth frame. */

export const usernameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_]{3,32}$/, 'must be 3-32 characters of A-Z, a-z, 0-9 and _');
export const passwordSchema = z
  .string()
  .min(8, 'must be at least 8 characters')
  .max(256, 'must be at most 256 characters');

export const registerRequestSchema = z
  .object({
    username: usernameSchema,
    password: passwordSchema,
    email: z.email().max(254).optional(),
    accept_terms: z.boolean(),
    confirm_18_plus: z.boolean(),
  })
  .strict();
export type RegisterRequest = z.infer<typeof registerRequestSchema>;

/** The username is looked up, so it follows the shared text rule; the password is only hashed. */
export const loginRequestSchema = z
  .object({ username: text(1, 64), password: z.string().min(1).max(256) })
  .strict();
export type LoginRequest = z.infer<typeof loginRequestSchema>;

export const refreshTokenRequestSchema = z.object({ refresh_token: z.string().min(1).max(512) }).strict();

export const publicUserSchema = z.object({
  id: z.string(),
  username: z.string(),
  created_at: z.string(),
});

export const tokenResponseSchema = z.object({
  user: publicUserSchema,
  access_token: z.string(),
  refresh_token: z.string(),
  token_type: z.literal('Bearer'),
  /** Seconds until the access token expires. */
  expires_in: z.number().int(),
});
export type TokenResponse = z.infer<typeof tokenResponseSchema>;

/**
 * Gateway: `{t: 'auth', id, d: {token, recover?}}`, answered by an ack carrying
 * `{user_id, roles, position?, recovered?}`. `recover` is the `pos` of the last event the client
 * received on an earlier connection: what it missed since is sent before the ack. A game server
 * sends its server token instead and is answered `{server_id, world_id}` (docs/gameservers.md).
 */
export const authFrameSchema = z
  .object({ token: z.string().min(1).max(8192), recover: streamPositionSchema.optional() })
  .strict();

const tag = 'accounts';

export const authRegister = operation('auth.register', {
  tag,
  summary: 'Create an account (18+ only) and start a session.',
  public: true,
  rest: { method: 'POST', path: '/api/auth/register', status: 201 },
  request: registerRequestSchema,
  response: tokenResponseSchema,
  errors: [409, 422, 429],
});

export const authLogin = operation('auth.login', {
  tag,
  summary:
    'Start a session with a username and password. Rate limited per username and per IP. A suspended account answers 403 ACCOUNT_SUSPENDED with `until`.',
  public: true,
  rest: { method: 'POST', path: '/api/auth/login' },
  request: loginRequestSchema,
  response: tokenResponseSchema,
  errors: [401, 403, 422, 429],
});

export const authRefresh = operation('auth.refresh', {
  tag,
  summary:
    'Exchange a refresh token for a new pair. Reusing a spent token revokes its whole session. A suspended account answers 403 ACCOUNT_SUSPENDED with `until`.',
  public: true,
  rest: { method: 'POST', path: '/api/auth/refresh' },
  request: refreshTokenRequestSchema,
  response: tokenResponseSchema,
  errors: [401, 403, 422],
});

export const authLogout = operation('auth.logout', {
  tag,
  summary: 'End the session of a refresh token. Idempotent.',
  public: true,
  rest: { method: 'POST', path: '/api/auth/logout', status: 204 },
  request: refreshTokenRequestSchema,
  response: z.null().describe('Logged out.'),
  errors: [422],
});

/** The auth frame's ack: who the connection now speaks for, and where its event stream stands. */
export const userAuthAckSchema = z.object({
  user_id: z.string(),
  roles: z.array(roleSchema),
  /**
   * The position of the last event sent to this connection, or the stream's current one: what a
   * later reconnect passes as `recover`. Absent on a re-auth of the same user, and while the
   * history cannot be read.
   */
  position: streamPositionSchema.optional(),
  /** Answers `recover`: true when every missed event was sent; false means refetch through the history routes. */
  recovered: z.boolean().optional(),
});

/** The ack of a game server's auth frame: the server and the one world its socket may follow. */
export const gameServerAuthAckSchema = z.object({ server_id: z.string(), world_id: z.string() });

export const authAckSchema = z.union([userAuthAckSchema, gameServerAuthAckSchema]);

export const authenticate = operation('auth', {
  tag,
  summary:
    'Bind the connection to the user of an access token; send again before it expires. With `recover`, the events missed since that position come first.',
  frame: true,
  setup: 'auth',
  socketOnly: 'authenticates the connection itself; a REST call carries its token on every request',
  public: true,
  request: authFrameSchema,
  response: authAckSchema,
});

export const authOperations = [authRegister, authLogin, authRefresh, authLogout, authenticate] as const;
