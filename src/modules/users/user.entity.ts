import { EntitySchema } from '@mikro-orm/core';

export const userRoles = ['user', 'moderator', 'admin'] as const;
export type UserRole = (typeof userRoles)[number];

export interface User {
  id: string;
  username: string;
  email: string | null;
  passwordHash: string;
  roles: UserRole[];
  termsAcceptedAt: Date;
  adultConfirmedAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

export const UserSchema = new EntitySchema<User>({
  name: 'User',
  tableName: 'users',
  properties: {
    id: { type: 'uuid', primary: true },
    username: { type: 'text' },
    email: { type: 'text', nullable: true },
    passwordHash: { type: 'text', fieldName: 'password_hash', hidden: true },
    roles: { type: 'array', columnType: 'user_role[]' },
    termsAcceptedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'terms_accepted_at' },
    adultConfirmedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'adult_confirmed_at' },
    createdAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'created_at' },
    updatedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'updated_at' },
  },
});
