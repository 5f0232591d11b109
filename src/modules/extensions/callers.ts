import type { Ctx } from '../../platform/context.js';
import type { DataAccess } from '../../platform/data-access.js';
import type { ExtensionCaller } from './extension-ctx.js';

const CACHED_USERNAMES = 10_000;

/**
 * The caller of a hook or rpc as extensions see it, `{user_id, username, roles}`: roles come with
 * the access token; usernames, which never change, are read once per account and kept in a
 * bounded cache, so a hooked call does not pay a read each time.
 */
export class CallerDirectory {
  private readonly usernames = new Map<string, string>();

  constructor(
    private readonly data: DataAccess,
    private readonly usernameOf: (data: DataAccess, id: string) => Promise<string | undefined>,
  ) {}

  /** The caller: at once when the account's username is known, else once it was read. */
  of(ctx: Ctx): ExtensionCaller | null | Promise<ExtensionCaller | null> {
    const user = ctx.user;
    if (!user) return null;
    const username = this.usernames.get(user.id);
    if (username !== undefined) return { user_id: user.id, username, roles: [...user.roles] };
    return this.usernameOf(this.data, user.id).then((read) => {
      if (this.usernames.size >= CACHED_USERNAMES)
        this.usernames.delete(this.usernames.keys().next().value as string);
      this.usernames.set(user.id, read ?? '');
      return { user_id: user.id, username: read ?? '', roles: [...user.roles] };
    });
  }
}
