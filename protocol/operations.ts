import type { z } from 'zod';
import { adminOperations } from './admin.js';
import { auditOperations } from './audit.js';
import { authOperations } from './auth.js';
import { chatOperations } from './chat.js';
import { chunkOperations } from './chunks.js';
import { discoveryOperations } from './discovery.js';
import { economyOperations } from './economy.js';
import { economyAdminOperations } from './economy-admin.js';
import { extensionOperations } from './extensions.js';
import { favoriteOperations } from './favorites.js';
import { ping } from './frames.js';
import { gameServerOperations } from './gameservers.js';
import { groupAdminOperations } from './group-admin.js';
import { groupOperations } from './groups.js';
import { internalOperations } from './internal.js';
import { leaderboardOperations } from './leaderboards.js';
import { marketplaceOperations } from './marketplace.js';
import { moderationOperations } from './moderation.js';
import { notificationOperations } from './notifications.js';
import { type Operation, type OutputOf, payloadSchema, type SentInputOf } from './operation.js';
import { partyOperations } from './parties.js';
import { presenceOperations } from './presence.js';
import { profileOperations } from './profiles.js';
import { roomContentOperations } from './room-content.js';
import { settingsOperations } from './settings.js';
import { socialOperations } from './social.js';
import { tournamentOperations } from './tournaments.js';
import { userOperations } from './users.js';
import { webhookOperations } from './webhooks.js';
import { worldChatOperations } from './world-chat.js';
import { worldOperations } from './worlds.js';

export * from './admin.js';
export * from './audit.js';
export * from './auth.js';
export * from './chat.js';
export * from './chunks.js';
export * from './discovery.js';
export * from './economy.js';
export * from './economy-admin.js';
export * from './extensions.js';
export * from './favorites.js';
export * from './gameservers.js';
export * from './group-admin.js';
export * from './groups.js';
export * from './internal.js';
export * from './leaderboards.js';
export * from './marketplace.js';
export * from './moderation.js';
export * from './notifications.js';
export * from './parties.js';
export * from './presence.js';
export * from './profiles.js';
export * from './room-content.js';
export * from './settings.js';
export * from './social.js';
export * from './tournaments.js';
export * from './users.js';
export * from './webhooks.js';
export * from './world-chat.js';
export * from './worlds.js';

/**
 * Every operation of the API by name: the one table the server registers both transports from,
 * the typed client calls and the conformance tests walk. A new domain adds its list here and
 * exports its file above (protocol/index.ts exports this file).
 */
const all = [
  ping,
  ...authOperations,
  ...auditOperations,
  ...adminOperations,
  ...userOperations,
  ...presenceOperations,
  ...profileOperations,
  ...worldOperations,
  ...roomContentOperations,
  ...chunkOperations,
  ...favoriteOperations,
  ...discoveryOperations,
  ...socialOperations,
  ...chatOperations,
  ...worldChatOperations,
  ...moderationOperations,
  ...groupOperations,
  ...groupAdminOperations,
  ...gameServerOperations,
  ...internalOperations,
  ...economyOperations,
  ...economyAdminOperations,
  ...marketplaceOperations,
  ...settingsOperations,
  ...extensionOperations,
  ...leaderboardOperations,
  ...notificationOperations,
  ...webhookOperations,
  ...tournamentOperations,
  ...partyOperations,
] as const;

type ByName<T extends readonly Operation[]> = { [O in T[number] as O['name']]: O };

export const operations = Object.fromEntries(all.map((op) => [op.name, op])) as ByName<typeof all>;
export type Operations = typeof operations;
export type OperationName = keyof Operations;

/** Client frame types: the operations reachable over the gateway. */
export type ClientFrameTypeName = {
  [K in OperationName]: Operations[K]['frame'] extends true ? K : never;
}[OperationName];

/** The payload schema (`d`) of every client frame, by type. */
export const clientPayloadSchemas = Object.fromEntries(
  all.filter((op) => op.frame).map((op) => [op.name, payloadSchema(op)]),
) as { [K in ClientFrameTypeName]: z.ZodType<SentInputOf<Operations[K]>> };

export type ClientPayload<T extends ClientFrameTypeName> = SentInputOf<Operations[T]>;

/** Ack payloads, by client frame type, inferred from the response schemas. */
export type AckPayloads = { [K in ClientFrameTypeName]: OutputOf<Operations[K]> };
