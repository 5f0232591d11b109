import { defineModule } from '../../platform/module.js';
import type { ExtensionsApi } from '../extensions/index.js';
import { registerConsoleRoutes } from './console.routes.js';
import { NodeSamples } from './node-samples.js';
import { OperatorApi } from './operator-api.js';
import type { ConsoleAction, ConsolePage } from './page.js';
import { auditPage } from './pages/audit.js';
import { broadcastPage, sendBroadcast } from './pages/broadcast.js';
import { configurationPage } from './pages/configuration.js';
import { economyActions, economyPage, payoutsPage } from './pages/economy.js';
import { extensionsPage } from './pages/extensions.js';
import { gameServersPage, stopGameServer } from './pages/gameservers.js';
import { groupActions, groupPage, groupsPage } from './pages/groups.js';
import { leaderboardActions, leaderboardPage, leaderboardsPage } from './pages/leaderboards.js';
import { decideReport, moderationPage } from './pages/moderation.js';
import { overviewPage } from './pages/overview.js';
import { tournamentActions, tournamentPage, tournamentsPage } from './pages/tournaments.js';
import { userActions, userPage, usersPage } from './pages/users.js';
import { webhookActions, webhookPage } from './pages/webhook-endpoint.js';
import { createWebhook, webhooksPage } from './pages/webhooks.js';
import { worldActions, worldPage, worldsPage } from './pages/worlds.js';
import { ConsoleSessions } from './session.js';

/**
 * The operator console at /console (docs/console.md): server-rendered pages for moderators and
 * admins that read and change everything through the service's own API, as the signed-in
 * operator. The one module it reads directly is extensions, for what this process loaded.
 */
export const consoleModule = defineModule({
  name: 'console',
  tables: [],
  needs: ['extensions'],
  setup({ config, kv, metrics, gateway, log }, { extensions }: { extensions: ExtensionsApi }) {
    const samples = new NodeSamples({
      metrics,
      gateway,
      kv,
      log,
      intervalMs: config.CONSOLE_SAMPLE_INTERVAL_SECONDS * 1000,
    });
    const sessions = new ConsoleSessions(kv, config.CONSOLE_SESSION_IDLE_SECONDS * 1000);
    const pages: ConsolePage[] = [
      overviewPage(samples),
      moderationPage,
      economyPage,
      payoutsPage,
      configurationPage,
      extensionsPage(extensions),
      usersPage,
      userPage,
      worldsPage,
      worldPage,
      gameServersPage,
      groupsPage,
      groupPage,
      leaderboardsPage,
      leaderboardPage,
      tournamentsPage,
      tournamentPage,
      webhooksPage,
      webhookPage,
      broadcastPage,
      auditPage,
    ];
    const actions: ConsoleAction[] = [
      decideReport,
      ...economyActions,
      ...userActions,
      ...worldActions,
      stopGameServer,
      ...groupActions,
      ...leaderboardActions,
      ...tournamentActions,
      createWebhook,
      ...webhookActions,
      sendBroadcast,
    ];
    return {
      api: { samples },
      routes: (http) =>
        registerConsoleRoutes(http, {
          pages,
          actions,
          sessions,
          api: new OperatorApi(http, sessions),
          idleSeconds: config.CONSOLE_SESSION_IDLE_SECONDS,
        }),
      start: () => samples.start(),
      stop: () => samples.stop(),
    };
  },
});
