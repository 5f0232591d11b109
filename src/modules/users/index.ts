import { usersGet } from '../../../protocol/users.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { UserSchema } from './user.entity.js';
import { UsersService } from './users.service.js';

export type { User } from './user.entity.js';
export { UserSchema } from './user.entity.js';
export {
  type AccountRow,
  existingUserIds,
  findAccount,
  findAccounts,
  storedStatusMessage,
  userExistsSql,
  usernameSql,
  writeStatusMessages,
} from './users.repository.js';
export { changeRole, findUserByUsername } from './users.service.js';

/** The user directory: the users table other modules build on, and another user's public view. */
export const usersModule = defineModule({
  name: 'users',
  entities: [UserSchema],
  tables: ['users'],
  needs: [],
  setup() {
    const users = new UsersService();
    return {
      api: {},
      operations: [serve(usersGet, (ctx, { user_id }) => users.publicView(ctx, user_id))],
    };
  },
});
