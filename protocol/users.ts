import { z } from 'zod';
import { operation } from './operation.js';

export const roleSchema = z.enum(['user', 'moderator', 'admin']);

/** GET /api/users/me */
export const meSchema = z.object({
  id: z.string(),
  username: z.string(),
  created_at: z.string(),
  last_seen_at: z.string().nullable(),
  status_message: z.string().nullable(),
  roles: z.array(roleSchema),
});
export type Me = z.infer<typeof meSchema>;

/** GET /api/users/{user_id}: what any signed-in user may see of another. */
export const publicUserViewSchema = z.object({
  id: z.string(),
  username: z.string(),
  created_at: z.string(),
});
export type PublicUserView = z.infer<typeof publicUserViewSchema>;

export const deleteAccountRequestSchema = z.object({ password: z.string().min(1).max(256) }).strict();

const tag = 'accounts';

export const usersMe = operation('users.me', {
  tag,
  summary: 'The signed-in account.',
  rest: { method: 'GET', path: '/api/users/me' },
  response: meSchema,
  errors: [401],
});

export const usersDeleteMe = operation('users.deleteMe', {
  tag,
  summary: 'Delete the signed-in account after re-checking its password.',
  rest: { method: 'DELETE', path: '/api/users/me', status: 204 },
  request: deleteAccountRequestSchema,
  response: z.null().describe('Deleted.'),
  errors: [401, 403, 422],
});

export const usersGet = operation('users.get', {
  tag,
  summary: "Another user's public view.",
  rest: { method: 'GET', path: '/api/users/:user_id' },
  request: z.object({ user_id: z.string().max(64) }),
  response: publicUserViewSchema,
  errors: [401, 404],
});

export const userOperations = [usersMe, usersDeleteMe, usersGet] as const;
