import { z } from 'zod';
import { wireIntegerOr } from './numbers.js';

/**
 * The one list shape of the API: `{items, next_cursor}`, read with `?limit=` (default 50, at most
 * 100) and `?cursor=` (the previous page's `next_cursor`, opaque to clients). Pages are keyset
 * pages: a cursor names the last item seen, so rows added or removed meanwhile never shift a page
 * (no gaps, no duplicates).
 */
export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 100;
/** The longest cursor a list takes. */
export const LIST_CURSOR_MAX = 512;

/** Query-string fields of a list operation (a query string carries text: wireInteger). */
export const listQuery = {
  limit: wireIntegerOr(LIST_DEFAULT_LIMIT, 1, LIST_MAX_LIMIT),
  cursor: z.string().min(1).max(LIST_CURSOR_MAX).optional(),
};

export function pageOf<Item extends z.ZodType>(item: Item) {
  return z.object({ items: z.array(item), next_cursor: z.string().nullable() });
}
