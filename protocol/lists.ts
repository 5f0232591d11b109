import { z } from 'zod';

/**
 * The one list shape of the API: `{items, next_cursor}`, read with `?limit=` (default 50, at most
 * 100) and `?cursor=` (the previous page's `next_cursor`, opaque to clients). Pages are keyset
 * pages: a cursor names the last item seen, so rows added or removed meanwhile never shift a page
 * (no gaps, no duplicates).
 */
export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 100;

/** Query-string fields of a list operation; coerced, since a query string carries text. */
export const listQuery = {
  limit: z.coerce.number().int().min(1).max(LIST_MAX_LIMIT).default(LIST_DEFAULT_LIMIT),
  cursor: z.string().min(1).max(512).optional(),
};

export function pageOf<Item extends z.ZodType>(item: Item) {
  return z.object({ items: z.array(item), next_cursor: z.string().nullable() });
}
