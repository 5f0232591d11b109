import type { AtriumClient } from '@atrium/client';

/**
 * Usernames by user id. Chat messages and chunk commits name their author by id only; each id is
 * looked up once (`users.get`) and remembered, and the lists that carry usernames seed it.
 */
export class Names {
  private readonly known = new Map<string, Promise<string>>();

  constructor(private readonly client: AtriumClient) {}

  remember(id: string, username: string): void {
    this.known.set(id, Promise.resolve(username));
  }

  of(id: string | null): Promise<string> {
    if (id === null) return Promise.resolve('(deleted account)');
    let name = this.known.get(id);
    if (!name) {
      name = this.client.call('users.get', { user_id: id }).then(
        (user) => user.username,
        () => {
          this.known.delete(id);
          return id.slice(0, 8);
        },
      );
      this.known.set(id, name);
    }
    return name;
  }
}
