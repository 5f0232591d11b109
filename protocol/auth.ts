import { z } from 'zod';
import { text } from './text.js';

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

/** Gateway: `{t: 'auth', id, d: {token}}`, answered by an ack carrying `{user_id, roles}`. */
export const authFrameSchema = z.object({ token: z.string().min(1).max(8192) }).strict();
