import type { Cluster, Node } from './cluster.js';
import type { SoakUser } from './soak-user.js';

/**
 * Presence convergence at the end of the soak: first every user shown online (to a lookup and to
 * its peer's subscription); then one node killed for good, its users not reconnecting, and the
 * time until they are shown offline and every other user still online.
 */

export interface PresenceCheck {
  /** The node killed at the end. */
  victim: number;
  /** After the load: users a lookup did not show online, and users their peer's subscription did not. */
  notOnline: Disagreement;
  /** Users whose node was killed at the end (and did not come back). */
  killedUsers: number;
  /** Seconds from that kill until lookups and subscriptions agreed with who is connected; undefined if they never did. */
  convergedAfterSeconds: number | undefined;
  /** Wrong answers at the deadline, when they did not converge. */
  wrong: Disagreement;
}

const QUERY_BATCH = 200;
const CONVERGE_DEADLINE_MS = 45_000;

export interface Disagreement {
  lookup: number;
  subscription: number;
}

/** Users the lookup (from `asker`) and their peer's subscription show otherwise than `expected` says. */
async function disagreeing(
  asker: SoakUser,
  users: readonly SoakUser[],
  expected: (user: SoakUser) => 'online' | 'offline',
): Promise<Disagreement> {
  const wrong = { lookup: 0, subscription: 0 };
  for (let start = 0; start < users.length; start += QUERY_BATCH) {
    const batch = users.slice(start, start + QUERY_BATCH);
    const { presence } = await asker.request<{ presence: Record<string, string> }>('presence.query', {
      user_ids: batch.map((user) => user.id),
    });
    wrong.lookup += batch.filter((user) => presence[user.id] !== expected(user)).length;
  }
  const byId = new Map(users.map((user) => [user.id, user]));
  for (const watcher of users) {
    if (!watcher.ready) continue;
    const peer = byId.get(watcher.peerId) as SoakUser;
    if (watcher.peerPresence !== expected(peer)) wrong.subscription++;
  }
  return wrong;
}

export async function checkPresence(cluster: Cluster, users: readonly SoakUser[]): Promise<PresenceCheck> {
  // The node with the most users: after the kills, users sit wherever they reconnected.
  const usersOn = (node: Node) => users.filter((user) => user.ready && user.node === node.index).length;
  const victim = cluster.up().reduce((most, node) => (usersOn(node) > usersOn(most) ? node : most));
  const asker = users.find((user) => user.ready && user.node !== victim.index);
  if (!asker) throw new Error('no connected user off the node to kill to ask for presence');
  const notOnline = await disagreeing(asker, users, () => 'online');
  const killed = new Set(users.filter((user) => user.node === victim.index));
  for (const user of killed) user.abandon();
  const killedAt = performance.now();
  await cluster.killNode(victim);
  const expected = (user: SoakUser) => (killed.has(user) ? 'offline' : 'online');
  let wrong: Disagreement = { lookup: 0, subscription: 0 };
  while (performance.now() - killedAt < CONVERGE_DEADLINE_MS) {
    wrong = await disagreeing(asker, users, expected);
    if (wrong.lookup + wrong.subscription === 0)
      return {
        victim: victim.index,
        notOnline,
        killedUsers: killed.size,
        convergedAfterSeconds: (performance.now() - killedAt) / 1000,
        wrong,
      };
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return {
    victim: victim.index,
    notOnline,
    killedUsers: killed.size,
    convergedAfterSeconds: undefined,
    wrong,
  };
}
