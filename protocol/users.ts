import { z } from 'zod';

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
