/**
 * The users each side is seeded with, the same shape on both: USERS users (user i the same role
 * on each side), the first CLIQUE of them friends with each other (a friends list of 50), all of
 * them members of one group (a roster page of 100), the first BUYERS buyers with funded wallets
 * and the next SELLERS sellers of one item each (bench/economy's market).
 */

export const USERS = 200;
export const CLIQUE = 51;
export const BUYERS = 50;
export const SELLERS = 10;

export interface Population {
  /** User i's id and session token. */
  users: { id: string; token: string }[];
  groupId: string;
  /** The purchases buyers may make, listing by listing (purchase i is buyer i % BUYERS's): the buyer's token and the body. */
  purchases: { token: string; body: Record<string, unknown> }[];
  /** Session tokens for the connect row, one per socket. */
  connectTokens: string[];
}
