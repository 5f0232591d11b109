import { dmConversations, dmHistory, dmSend } from '../../../protocol/chat.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { ProfilesApi } from '../profiles/index.js';
import type { SocialApi } from '../social/index.js';
import { ChatService } from './chat.service.js';
import { createTextFilter } from './text-filter.js';

/** Direct messages: sending through the text filter and rate limit, history, conversation list (docs/chat.md). */
export const chatModule = defineModule({
  name: 'chat',
  entities: [],
  needs: ['profiles', 'social'],
  setup({ bus, kv, config }, { profiles, social }: { profiles: ProfilesApi; social: SocialApi }) {
    const chat = new ChatService({
      bus,
      privacy: profiles,
      social,
      sendLimiter: createLimiter(kv, {
        keyPrefix: 'dm-send',
        points: config.DM_RATE_LIMIT_COUNT,
        durationSeconds: config.DM_RATE_LIMIT_WINDOW_SECONDS,
      }),
      filter: createTextFilter(config.DM_FILTER_MODE),
    });
    return {
      api: {},
      operations: [
        serve(dmSend, (ctx, { user_id, body }) => chat.send(ctx, user_id, body)),
        serve(dmHistory, (ctx, { user_id, ...page }) => chat.history(ctx, user_id, page)),
        serve(dmConversations, (ctx, page) => chat.conversations(ctx, page)),
      ],
    };
  },
});
