import { Migration } from '@mikro-orm/migrations';

/**
 * The key-value storage of server extensions (`ctx.storage`, src/modules/extensions/storage.ts):
 * records (extension, collection, user or none, key) -> {value, version}, and the count of each
 * extension's records its quota is checked against.
 *
 * - `owner` is the record's user, or the nil uuid for a global record (no account has it: ids are
 *   made by the service), so one primary key makes (extension, collection, owner, key) unique and
 *   every statement names a record by plain equalities; a nullable user_id in the key would need
 *   two statements per operation (`is null` or `=`). The key's order is also the order `list`
 *   pages in.
 * - `collection` and `key` sort with the "C" collation, code point order, so a page's order and
 *   its cursor do not depend on the server's locale.
 * - `value` is `json`, the text as given: `jsonb` would reorder an object's keys, and refuses the
 *   \u0000 escape a JSON string may hold. Nothing queries into values.
 * - The count is kept by triggers, so it stays right whoever deletes: the account deletion's
 *   cascade too, not only the service. Deletes count per statement, their extensions' rows locked
 *   in name order, so two cascades over several extensions cannot deadlock on them.
 */
export class Migration0030ExtensionStorage extends Migration {
  override up(): void {
    this.addSql(`
      create table extension_storage (
        extension text not null,
        collection text collate "C" not null check (char_length(collection) between 1 and 128),
        key text collate "C" not null check (char_length(key) between 1 and 128),
        user_id uuid references users (id) on delete cascade,
        owner uuid not null generated always as (coalesce(user_id, '00000000-0000-0000-0000-000000000000')) stored,
        value json not null,
        version bigint not null check (version >= 1),
        updated_at timestamptz not null default now(),
        primary key (extension, collection, owner, key)
      )`);
    // The account deletion's cascade finds a user's records by it.
    this.addSql(
      'create index extension_storage_user_idx on extension_storage (user_id) where user_id is not null',
    );
    this.addSql(`
      create table extension_storage_usage (
        extension text primary key,
        records integer not null check (records >= 0)
      )`);
    this.addSql(`
      create function extension_storage_count_insert() returns trigger language plpgsql as $$
      begin
        insert into extension_storage_usage as usage (extension, records) values (new.extension, 1)
        on conflict (extension) do update set records = usage.records + 1;
        return null;
      end $$`);
    this.addSql(`
      create trigger extension_storage_count_insert after insert on extension_storage
      for each row execute function extension_storage_count_insert()`);
    this.addSql(`
      create function extension_storage_count_delete() returns trigger language plpgsql as $$
      begin
        perform 1 from extension_storage_usage
        where extension in (select extension from removed) order by extension for update;
        update extension_storage_usage usage set records = usage.records - gone.n
        from (select extension, count(*)::integer as n from removed group by extension) gone
        where usage.extension = gone.extension;
        return null;
      end $$`);
    this.addSql(`
      create trigger extension_storage_count_delete after delete on extension_storage
      referencing old table as removed
      for each statement execute function extension_storage_count_delete()`);
  }
}
