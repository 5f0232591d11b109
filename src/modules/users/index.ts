import { usersGet } from '../../../protocol/users.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { directoryEntry, directoryPage } from './directory.repository.js';
import { liftSuspension, suspendAccount } from './suspensions.js';
import {
  accountIdsAfter,
  createUser,
  deleteUser,
  existingUserIds,
  findAccounts,
  findUserById,
  findUserByUsername,
  lockAccount,
  storedStatusMessage,
  suspensionOf,
  usernamesOf,
  writeLastSeen,
  writeStatusMessages,
} from './users.repository.js';
import { changeRoleById, UsersService } from './users.service.js';

export type { DirectoryRow } from './directory.repository.js';
export { type Suspension, suspensionInForce, suspensionJson } from './suspensions.js';
export type { AccountRow, User } from './users.repository.js';
/** SQL fragments for other modules' statements that read a user in the same round trip. */
export { userExistsSql, usernameSql } from './users.repository.js';
/** Operator tooling: the CLI's `atrium admin grant|revoke`. */
export { changeRole } from './users.service.js';

/** What other modules may use of the user directory: every statement they run on the users table. */
export interface UsersApi {
  /** Accounts as GET /api/users/me shows them (account). */
  findAccounts: typeof findAccounts;
  /** Which ids name an account (presence lookups, economy grants). */
  existingUserIds: typeof existingUserIds;
  /** Every account once, in pages (a broadcast to everyone). */
  accountIdsAfter: typeof accountIdsAfter;
  /** Ids and usernames of the accounts among some ids (social). */
  usernamesOf: typeof usernamesOf;
  /** Whole accounts: registration, login by username (case-insensitively), refresh, deletion. */
  createUser: typeof createUser;
  findUserByUsername: typeof findUserByUsername;
  findUserById: typeof findUserById;
  deleteUser: typeof deleteUser;
  /** Locks the account's row for the transaction (worlds' favorites). */
  lockAccount: typeof lockAccount;
  /** The stored status message, and the coalesced writes of it and of last_seen_at (presence). */
  storedStatusMessage: typeof storedStatusMessage;
  writeStatusMessages: typeof writeStatusMessages;
  writeLastSeen: typeof writeLastSeen;
  /** Administration (docs/admin.md): suspensions and role changes, each audited in its transaction. */
  suspendAccount: typeof suspendAccount;
  liftSuspension: typeof liftSuspension;
  changeRoleById: typeof changeRoleById;
  /** The console's lookups: one account, or a page of them by username or id. */
  directoryEntry: typeof directoryEntry;
  directoryPage: typeof directoryPage;
  /** The suspension columns as committed, read again by login after it wrote its session. */
  suspensionOf: typeof suspensionOf;
}

/** The user directory: the users table other modules build on, and another user's public view. */
export const usersModule = defineModule({
  name: 'users',
  tables: ['users'],
  needs: ['audit'],
  setup() {
    const users = new UsersService();
    const api: UsersApi = {
      findAccounts,
      existingUserIds,
      accountIdsAfter,
      usernamesOf,
      createUser,
      findUserByUsername,
      findUserById,
      deleteUser,
      lockAccount,
      storedStatusMessage,
      writeStatusMessages,
      writeLastSeen,
      suspendAccount,
      liftSuspension,
      changeRoleById,
      directoryEntry,
      directoryPage,
      suspensionOf,
    };
    return {
      api,
      operations: [serve(usersGet, (ctx, { user_id }) => users.publicView(ctx, user_id))],
    };
  },
});
