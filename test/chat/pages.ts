import type { LightMyRequestResponse } from 'fastify';
import type { TokenResponse } from '../../protocol/auth.js';

type ExpectStatus = (
  status: number,
  method: 'GET',
  url: string,
  user: TokenResponse,
) => Promise<LightMyRequestResponse>;

/**
 * The bodies of every page of a message history at `url`, `limit` at a time, newest first.
 * `between` runs before each page after the first without being awaited, so that what it starts
 * (sends) races the next page's read.
 */
export async function readAllPages(
  expectStatus: ExpectStatus,
  reader: TokenResponse,
  url: string,
  limit: number,
  between?: () => void,
): Promise<string[]> {
  const bodies: string[] = [];
  let before: string | null = null;
  for (let pages = 0; pages < 50; pages++) {
    const query: string = `?limit=${limit}${before ? `&before=${before}` : ''}`;
    const page: { items: { body: string }[]; next_cursor: string | null } = (
      await expectStatus(200, 'GET', `${url}${query}`, reader)
    ).json();
    bodies.push(...page.items.map((m) => m.body));
    before = page.next_cursor;
    if (!before) return bodies;
    between?.();
  }
  throw new Error('the history did not end within 50 pages');
}
