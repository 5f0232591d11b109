import { usersDeleteMe, usersMe } from '../../../protocol/users.js';
import { statementsAtOnce } from '../../platform/batcher.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import type { AuthApi } from '../auth/index.js';
import type { PresenceApi } from '../presence/index.js';
import type { UsersApi } from '../users/index.js';
import { type AccountDeletionListener, AccountService } from './account.service.js';

export type { AccountDeletionListener } from './account.service.js';

/** What other modules may use of the account: work in the transaction that deletes one. */
export interface AccountApi {
  /** Runs `listener` in every account deletion's transaction (AccountDeletionListener). */
  onDeletion(listener: AccountDeletionListener): void;
}

/** The signed-in user's own account (`/api/users/me`): built on sessions and presence. */
export const accountModule = defineModule({
  name: 'account',
  tables: [],
  needs: ['users', 'auth', 'presence'],
  setup(
    { db, metrics, outbox },
    { users, auth, presence }: { users: UsersApi; auth: AuthApi; presence: PresenceApi },
  ) {
    const account = new AccountService({
      sessions: auth,
      presence,
      accounts: users,
      readConcurrency: statementsAtOnce(db.poolSize),
      observeReadBatch: (size) => metrics.statementBatchSize.observe({ statement: 'account_read' }, size),
      outbox,
    });
    const api: AccountApi = { onDeletion: (listener) => account.onDeletion(listener) };
    return {
      api,
      operations: [
        serve(usersMe, (ctx) => account.me(ctx)),
        serve(usersDeleteMe, (ctx, { password }) => account.deleteAccount(ctx, password)),
      ],
    };
  },
});
