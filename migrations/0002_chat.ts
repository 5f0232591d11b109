import { Migration } from '@mikro-orm/migrations';

/**
 * Chat: direct-message conversations, messages of conversations, worlds and rooms, and reports.
 *
 * - A conversation is one row per unordered pair, stored ordered (user_a_id < user_b_id) so the
 *   unique key finds it from either side and a concurrent first send cannot make two. Either
 *   user's deletion deletes it, with its participants and messages.
 * - `last_message_at` orders a user's conversation list: one index per side of the pair serves
 *   the list as two keyset range scans merged, without reading every conversation of the user.
 * - A participant row per user carries what is per reader (last_read_at, migration 0011).
 * - A message belongs to exactly one target: a conversation, or a world (and optionally one of its
 *   rooms). Its sender becomes null when the account goes; the message stays in the history.
 * - History reads are keyset scans newest first on (target, created_at desc, id desc).
 * - A report outlives its message and the users involved (set null); one per reporter and message.
 */
export class Migration0002Chat extends Migration {
  override up(): void {
    this.addSql(`
      create table conversations (
        id uuid primary key,
        user_a_id uuid not null references users (id) on delete cascade,
        user_b_id uuid not null references users (id) on delete cascade,
        created_at timestamptz not null default now(),
        last_message_at timestamptz not null default now(),
        constraint conversations_ordered_pair check (user_a_id < user_b_id),
        constraint conversations_pair_key unique (user_a_id, user_b_id)
      )`);
    this.addSql(
      'create index conversations_user_a_activity_idx on conversations (user_a_id, last_message_at desc, id desc)',
    );
    this.addSql(
      'create index conversations_user_b_activity_idx on conversations (user_b_id, last_message_at desc, id desc)',
    );
    this.addSql(`
      create table conversation_participants (
        conversation_id uuid not null references conversations (id) on delete cascade,
        user_id uuid not null references users (id) on delete cascade,
        primary key (conversation_id, user_id)
      )`);
    this.addSql('create index conversation_participants_user_idx on conversation_participants (user_id)');
    this.addSql(`
      create table messages (
        id uuid primary key,
        conversation_id uuid references conversations (id) on delete cascade,
        -- Their foreign keys come with 0011: on a new database this runs before 0005 made worlds.
        world_id uuid,
        room_id uuid,
        sender_id uuid references users (id) on delete set null,
        body text not null constraint messages_body_length check (char_length(body) between 1 and 2000),
        filtered boolean not null default false,
        created_at timestamptz not null default now(),
        constraint messages_one_target check (
          (conversation_id is not null and world_id is null and room_id is null)
          or (conversation_id is null and world_id is not null)
        )
      )`);
    this.addSql(`
      create index messages_conversation_history_idx on messages (conversation_id, created_at desc, id desc)
      where conversation_id is not null`);
    // Serves world chat history (with room_id is null as a filter) and the world's cascade.
    this.addSql(`
      create index messages_world_history_idx on messages (world_id, created_at desc, id desc)
      where world_id is not null`);
    this.addSql(`
      create index messages_room_history_idx on messages (room_id, created_at desc, id desc)
      where room_id is not null`);
    this.addSql('create index messages_sender_idx on messages (sender_id) where sender_id is not null');
    this.addSql(`
      create table message_reports (
        id uuid primary key,
        message_id uuid references messages (id) on delete set null,
        reporter_id uuid references users (id) on delete set null,
        moderator_id uuid references users (id) on delete set null,
        reason text not null constraint message_reports_reason_length check (char_length(reason) between 1 and 200),
        details text constraint message_reports_details_length check (char_length(details) <= 2000),
        state report_state not null default 'open',
        note text constraint message_reports_note_length check (char_length(note) <= 2000),
        created_at timestamptz not null default now(),
        resolved_at timestamptz,
        constraint message_reports_once unique (message_id, reporter_id)
      )`);
    this.addSql(
      'create index message_reports_queue_idx on message_reports (state, created_at desc, id desc)',
    );
    this.addSql(
      'create index message_reports_reporter_idx on message_reports (reporter_id) where reporter_id is not null',
    );
    this.addSql(
      'create index message_reports_moderator_idx on message_reports (moderator_id) where moderator_id is not null',
    );
  }
}
