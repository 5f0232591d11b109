import { Migration } from '@mikro-orm/migrations';

/**
 * Instance access (docs/gameservers.md, "Instance access").
 *
 * A game server's `access` says who may join it: `public` (whoever may read its world, as every
 * server did before), `friends` (its owner's friends and invitees) or `invite` (its owner's
 * invitees). Its owner is `requested_by`, the user whose join or spawn started it, as it always
 * was. An invitation admits its user to one server while the server lives; the owner alone
 * invites, so an owner's deleted account takes their invitations with it, and a deleted invitee
 * or server takes theirs.
 *
 * Indexes: the key serves the admission check (server, user); the user columns serve the cascades
 * of an account's deletion.
 */
export class Migration0037InstanceAccess extends Migration {
  override up(): void {
    this.addSql(`
      alter table game_servers
        add column access text not null default 'public' check (access in ('public', 'friends', 'invite'))`);
    this.addSql(`
      create table game_server_invitations (
        server_id uuid not null references game_servers (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        invited_by uuid not null references users (id) on delete cascade,
        created_at timestamptz not null,
        primary key (server_id, user_id)
      )`);
    this.addSql('create index game_server_invitations_by_user on game_server_invitations (user_id)');
    this.addSql('create index game_server_invitations_by_inviter on game_server_invitations (invited_by)');
  }
}
