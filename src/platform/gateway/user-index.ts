/**
 * The authenticated connections of each user on this node. Almost every user has one socket, so
 * the entry is that connection itself and becomes a Set only at the second: a Set per user was
 * a measurable part of an idle socket's memory.
 */
export class UserIndex<C> {
  private readonly byUser = new Map<string, C | Set<C>>();

  /** Adds the connection; returns whether it is the user's first here, or undefined if already present. */
  add(userId: string, connection: C): boolean | undefined {
    const entry = this.byUser.get(userId);
    if (entry === undefined) {
      this.byUser.set(userId, connection);
      return true;
    }
    if (entry instanceof Set) {
      if (entry.has(connection)) return undefined;
      entry.add(connection);
      return false;
    }
    if (entry === connection) return undefined;
    this.byUser.set(userId, new Set([entry, connection]));
    return false;
  }

  /** Removes the connection; returns whether it was the user's last here, or undefined if absent. */
  delete(userId: string, connection: C): boolean | undefined {
    const entry = this.byUser.get(userId);
    if (entry === connection) {
      this.byUser.delete(userId);
      return true;
    }
    if (!(entry instanceof Set) || !entry.delete(connection)) return undefined;
    if (entry.size === 1) this.byUser.set(userId, entry.values().next().value as C);
    return false;
  }

  /** The user's connections on this node. */
  connectionsOf(userId: string): C[] {
    const entry = this.byUser.get(userId);
    if (entry === undefined) return [];
    return entry instanceof Set ? [...entry] : [entry];
  }

  /** Whether the user has a connection on this node. */
  has(userId: string): boolean {
    return this.byUser.has(userId);
  }

  userIds(): string[] {
    return [...this.byUser.keys()];
  }
}
