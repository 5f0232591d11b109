import { EntitySchema } from '@mikro-orm/core';
import type { Privacy } from '../../../protocol/profiles.js';

/**
 * A saved profile; users who never saved one have none and read the defaults. The primary key is
 * the user's id (a foreign key with ON DELETE CASCADE in the migration), kept as a plain column so
 * an upsert can name it directly.
 */
export interface Profile {
  userId: string;
  bio: string;
  avatarAssetId: string | null;
  profileVisibility: Privacy['profile_visibility'];
  presenceVisibility: Privacy['presence_visibility'];
  dmPolicy: Privacy['dm_policy'];
  favoritesVisibility: Privacy['favorites_visibility'];
  updatedAt: Date;
}

export const ProfileSchema = new EntitySchema<Profile>({
  name: 'Profile',
  tableName: 'profiles',
  properties: {
    userId: { type: 'uuid', primary: true, fieldName: 'user_id' },
    bio: { type: 'text', default: '' },
    avatarAssetId: { type: 'text', fieldName: 'avatar_asset_id', nullable: true },
    profileVisibility: {
      type: 'string',
      columnType: 'profile_visibility',
      fieldName: 'profile_visibility',
      default: 'public',
    },
    presenceVisibility: {
      type: 'string',
      columnType: 'audience',
      fieldName: 'presence_visibility',
      default: 'everyone',
    },
    dmPolicy: { type: 'string', columnType: 'audience', fieldName: 'dm_policy', default: 'everyone' },
    favoritesVisibility: {
      type: 'string',
      columnType: 'profile_visibility',
      fieldName: 'favorites_visibility',
      default: 'public',
    },
    updatedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'updated_at' },
  },
});
