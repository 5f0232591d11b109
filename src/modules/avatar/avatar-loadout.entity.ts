import { EntitySchema } from '@mikro-orm/core';

/**
 * A saved avatar loadout: the game client's JSON document as it was accepted, without
 * `is_default` (the server derives that from whether a row exists). The primary key is the
 * user's id (a foreign key with ON DELETE CASCADE in the migration).
 */
export interface AvatarLoadoutRow {
  userId: string;
  document: Record<string, unknown>;
  updatedAt: Date;
}

export const AvatarLoadoutSchema = new EntitySchema<AvatarLoadoutRow>({
  name: 'AvatarLoadout',
  tableName: 'avatar_loadouts',
  properties: {
    userId: { type: 'uuid', primary: true, fieldName: 'user_id' },
    document: { type: 'json', columnType: 'jsonb' },
    updatedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'updated_at' },
  },
});
