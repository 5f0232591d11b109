import { accountModule } from './account/index.js';
import { adminModule } from './admin/index.js';
import { auditModule } from './audit/index.js';
import { authModule } from './auth/index.js';
import { avatarModule } from './avatar/index.js';
import { chatModule } from './chat/index.js';
import { consoleModule } from './console/index.js';
import { discoveryModule } from './discovery/index.js';
import { economyModule } from './economy/index.js';
import { extensionsModule } from './extensions/index.js';
import { gameServersModule } from './gameservers/index.js';
import { groupsModule } from './groups/index.js';
import { healthModule } from './health/index.js';
import { leaderboardsModule } from './leaderboards/index.js';
import { moderationModule } from './moderation/index.js';
import { notificationsModule } from './notifications/index.js';
import { partiesModule } from './parties/index.js';
import { presenceModule } from './presence/index.js';
import { profilesModule } from './profiles/index.js';
import { settingsModule } from './settings/index.js';
import { socialModule } from './social/index.js';
import { usersModule } from './users/index.js';
import { webhooksModule } from './webhooks/index.js';
import { worldsModule } from './worlds/index.js';

/**
 * Every domain of the service, in build order: a module comes after the modules it needs. Adding
 * a domain adds one line here (see docs/modules.md).
 */
export const modules = [
  healthModule,
  auditModule,
  usersModule,
  notificationsModule,
  profilesModule,
  socialModule,
  chatModule,
  worldsModule,
  discoveryModule,
  groupsModule,
  presenceModule,
  authModule,
  accountModule,
  partiesModule,
  adminModule,
  avatarModule,
  moderationModule,
  gameServersModule,
  economyModule,
  leaderboardsModule,
  settingsModule,
  webhooksModule,
  extensionsModule,
  consoleModule,
] as const;
