import { Migration } from '@mikro-orm/migrations';

/**
 * The `party.follow` a party placement owes its members (docs/gameservers.md, "Joining
 * together"), kept in the database with the placement instead of in the leader's request: one row
 * per placed member but the leader and server, written in the placement's transaction. Whichever
 * node sees the server ready takes the rows in the statement that marks it ready and sends them;
 * the leader's request takes what is left once it answers, and each node's reconcile what a
 * dead node left. Taking is deleting, so each row is sent once. Rows go with their server and
 * their user.
 */
export class Migration0040PartyFollows extends Migration {
  override up(): void {
    this.addSql(`
      create table game_server_party_follows (
        server_id uuid not null references game_servers (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        party_id uuid not null,
        primary key (server_id, user_id)
      )`);
    // A user's deletion finds their rows.
    this.addSql('create index game_server_party_follows_user_idx on game_server_party_follows (user_id)');
  }
}
