import { EntitySchema } from '@mikro-orm/core';

export interface Session {
  id: string;
  userId: string;
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
    userId: { type: 'uuid', fieldName: 'user_id' },
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
  sessionId: string;
  createdAt: Date;
  expiresAt: Date;
  rotatedAt: Date | null;
}

export const RefreshTokenSchema = new EntitySchema<RefreshToken>({
  name: 'RefreshToken',
  tableName: 'refresh_tokens',
  properties: {
    tokenHash: { type: 'Buffer', columnType: 'bytea', fieldName: 'token_hash', primary: true },
    sessionId: { type: 'uuid', fieldName: 'session_id' },
    createdAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'created_at' },
    expiresAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'expires_at' },
    rotatedAt: { type: 'Date', columnType: 'timestamptz', fieldName: 'rotated_at', nullable: true },
  },
});
