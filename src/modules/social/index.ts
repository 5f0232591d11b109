import {
  blocksDelete,
  blocksList,
  blocksPut,
  followsDelete,
  followsFollowers,
  followsFollowing,
  followsPut,
  friendRequestsAccept,
  friendRequestsCancel,
  friendRequestsCreate,
  friendRequestsDecline,
  friendRequestsList,
  friendsDelete,
  friendsList,
} from '../../../protocol/social.js';
import type { DataAccess } from '../../platform/data-access.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { createLimiter } from '../../platform/rate-limit.js';
import type { NotificationsApi } from '../notifications/index.js';
import type { ProfilesApi } from '../profiles/index.js';
import type { UsersApi } from '../users/index.js';
import { relationsOf } from './relations.js';
import { lockPair } from './social.repository.js';
import { type PairBlockListener, SocialService } from './social.service.js';

export {
  blockBetweenSql,
  friendIdsSql,
  friendsBetweenSql,
  type PrivacySetting,
  privacyAdmits,
  type Relation,
} from './relations.js';
export { USER_BLOCKED, type UserBlockedEvent } from './social.service.js';

/** What other modules may use of the social graph: how two users relate, for privacy rules. */
export interface SocialApi {
  relationsOf: typeof relationsOf;
  /**
   * Holds the pair's lock, shared, until the transaction of `data` ends: a block of the pair being
   * written is waited for, and waits in turn. A statement after it sees any block committed first.
   */
  holdPair(data: DataAccess, a: string, b: string): Promise<void>;
  /** Registers a listener run in every block and unblock transaction of a pair (PairBlockListener). */
  onPairBlockChange(listener: PairBlockListener): void;
}

/** Friend requests and friendships, follows and blocks (docs/social.md). */
export const socialModule = defineModule({
  name: 'social',
  tables: ['friendships', 'follows', 'blocks'],
  needs: ['users', 'profiles', 'notifications'],
  setup(
    { bus, kv, config },
    {
      users,
      profiles,
      notifications,
    }: { users: UsersApi; profiles: ProfilesApi; notifications: NotificationsApi },
  ) {
    const social = new SocialService({
      bus,
      privacy: profiles,
      users,
      notifications,
      reachLimiter: createLimiter(kv, {
        keyPrefix: 'social-reach',
        points: config.SOCIAL_RATE_LIMIT_COUNT,
        durationSeconds: config.SOCIAL_RATE_LIMIT_WINDOW_SECONDS,
      }),
    });
    const api: SocialApi = {
      relationsOf,
      holdPair: (data, a, b) => lockPair(data, a, b, true),
      onPairBlockChange: (listener) => social.onPairBlockChange(listener),
    };
    return {
      api,
      operations: [
        serve(friendRequestsCreate, (ctx, { user_id }) => social.request(ctx, user_id)),
        serve(friendRequestsAccept, (ctx, { user_id }) => social.accept(ctx, user_id)),
        serve(friendRequestsDecline, (ctx, { user_id }) => social.decline(ctx, user_id)),
        serve(friendRequestsCancel, (ctx, { user_id }) => social.cancel(ctx, user_id)),
        serve(friendRequestsList, (ctx, { direction, ...page }) => social.requests(ctx, direction, page)),
        serve(friendsList, (ctx, page) => social.friends(ctx, page)),
        serve(friendsDelete, (ctx, { user_id }) => social.unfriend(ctx, user_id)),
        serve(followsPut, (ctx, { user_id }) => social.follow(ctx, user_id)),
        serve(followsDelete, (ctx, { user_id }) => social.unfollow(ctx, user_id)),
        serve(followsFollowers, (ctx, { user_id, ...page }) =>
          social.follows(ctx, 'followers', user_id, page),
        ),
        serve(followsFollowing, (ctx, { user_id, ...page }) =>
          social.follows(ctx, 'following', user_id, page),
        ),
        serve(blocksPut, (ctx, { user_id }) => social.block(ctx, user_id)),
        serve(blocksDelete, (ctx, { user_id }) => social.unblock(ctx, user_id)),
        serve(blocksList, (ctx, page) => social.blocks(ctx, page)),
      ],
    };
  },
});
