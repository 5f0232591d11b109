import { EntitySchema, type Ref } from '@mikro-orm/core';
import { type User, UserSchema } from '../users/index.js';

export interface Session {
  id: string;
  user: Ref<User>;
  createdAt: Date;
  expiresAt: Date;
  lastRefreshedAt: Date | null;
  revokedAt: Date | null;
  revokedReason: string | null;
}

export const SessionSchema = new EntitySchema<Session>({
  name: 'Session',
  tableName: 'sessions',
  properties: {
    id: { type: 'uuid', primary: true },
    user: { kind: 'm:1', entity: () => UserSchema, ref: true, fieldName: 'user_id', deleteRule: 'cascade' },
    createdAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'created_at' },
    expiresAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'expires_at' },
    lastRefreshedAt: {
      type: 'Date',
      columnType: 'timestamptz',
      fieldName: 'last_refreshed_at',
      nullable: true,
    },
    revokedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'revoked_at', nullable: true },
    revokedReason: { type: 'text', fieldName: 'revoked_reason', nullable: true },
  },
});

export interface RefreshToken {
  tokenHash: Buffer;
  session: Ref<Session>;
  createdAt: Date;
  expiresAt: Date;
  rotatedAt: Date | null;
}

export const RefreshTokenSchema = new EntitySchema<RefreshToken>({
  name: 'RefreshToken',
  tableName: 'refresh_tokens',
  properties: {
    tokenHash: { type: 'Buffer', columnType: 'bytea', fieldName: 'token_hash', primary: true },
    session: {
      kind: 'm:1',
      entity: () => SessionSchema,
      ref: true,
      fieldName: 'session_id',
      deleteRule: 'cascade',
    },
    createdAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'created_at' },
    expiresAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'expires_at' },
    rotatedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'rotated_at', nullable: true },
  },
});
