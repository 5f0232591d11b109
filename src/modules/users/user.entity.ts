import { EntitySchema } from '@mikro-orm/core';
import type { Role } from '../../platform/auth/access-tokens.js';

export interface User {
  id: string;
  username: string;
  email: string | null;
  passwordHash: string;
  roles: Role[];
  lastSeenAt: Date | null;
  statusMessage: string | null;
  termsAcceptedAt: Date;
  adultConfirmedAt: Date;
  createdAt: Date;
  updatedAt: Date;
  /** A suspension, when one was set and not lifted: in force while `suspendedUntil` is null or later than now. */
  suspendedAt?: Date | null;
  suspendedUntil?: Date | null;
  suspensionReason?: string | null;
  suspendedBy?: string | null;
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
    lastSeenAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'last_seen_at', nullable: true },
    statusMessage: { type: 'text', fieldName: 'status_message', nullable: true },
    createdAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'created_at' },
    updatedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'updated_at' },
    suspendedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'suspended_at', nullable: true },
    suspendedUntil: { type: 'Date', columnType: 'timestamptz', fieldName: 'suspended_until', nullable: true },
    suspensionReason: { type: 'text', fieldName: 'suspension_reason', nullable: true },
    suspendedBy: { type: 'uuid', fieldName: 'suspended_by', nullable: true },
  },
});
