import { reportsCreate, reportsList, reportsUpdate } from '../../../protocol/moderation.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { AuditApi } from '../audit/index.js';
import type { ChatApi } from '../chat/index.js';
import type { GroupsApi } from '../groups/index.js';
import type { NotificationsApi } from '../notifications/index.js';
import type { PartiesApi } from '../parties/index.js';
import type { WorldsApi } from '../worlds/index.js';
import { ModerationService } from './moderation.service.js';

/** Message reports and the moderators' queue (docs/moderation.md). */
export const moderationModule = defineModule({
  name: 'moderation',
  tables: ['message_reports'],
  needs: ['worlds', 'groups', 'parties', 'chat', 'audit', 'notifications'],
  setup(
    { kv, config, outbox },
    {
      worlds,
      groups,
      parties,
      chat,
      audit,
      notifications,
    }: {
      worlds: WorldsApi;
      groups: GroupsApi;
      parties: PartiesApi;
      chat: ChatApi;
      audit: AuditApi;
      notifications: NotificationsApi;
    },
  ) {
    const moderation = new ModerationService({
      worlds,
      groups,
      parties,
      messages: chat,
      audit,
      notifications,
      outbox,
      reportLimiter: createLimiter(kv, {
        keyPrefix: 'report',
        points: config.REPORT_RATE_LIMIT_COUNT,
        durationSeconds: config.REPORT_RATE_LIMIT_WINDOW_SECONDS,
      }),
    });
    return {
      api: {},
      operations: [
        serve(reportsCreate, (ctx, { message_id, ...input }) => moderation.report(ctx, message_id, input)),
        serve(reportsList, (ctx, { state, ...page }) => moderation.list(ctx, state, page)),
        serve(reportsUpdate, (ctx, { report_id, ...decision }) =>
          moderation.decide(ctx, report_id, decision),
        ),
      ],
    };
  },
});
